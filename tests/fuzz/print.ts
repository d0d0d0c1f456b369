/** Kernel source text from the fuzzer's AST: the text the library compiles, and a repro prints. */
import type { Expr, Helper, Kernel, Stmt } from './kernel-ast.js';
import { ARRAY_NAMES } from './types.js';

export function printExpr(e: Expr): string {
  switch (e.k) {
    case 'var': return e.name;
    case 'lit': return printLiteral(e.v);
    case 'index': return `${e.arr}[${printExpr(e.index)}]`;
    case 'index2': return `${e.arr}[${printExpr(e.i)}][${printExpr(e.j)}]`;
    case 'len': return e.axis === 0 ? `${e.arr}.length` : `${e.arr}.shape[1]`;
    case 'neg': return `(-${printExpr(e.a)})`;
    case 'bitnot': return `(~${printExpr(e.a)})`;
    case 'not': return `(!${printExpr(e.a)})`;
    case 'bin': return `(${printExpr(e.a)} ${e.op} ${printExpr(e.b)})`;
    case 'cmp': return `(${printExpr(e.a)} ${e.op} ${printExpr(e.b)})`;
    case 'logic': return `(${printExpr(e.a)} ${e.op} ${printExpr(e.b)})`;
    case 'tern': return `(${printExpr(e.c)} ? ${printExpr(e.a)} : ${printExpr(e.b)})`;
    case 'math': return `Math.${e.fn}(${e.args.map(printExpr).join(', ')})`;
    case 'isnan': return `isNaN(${printExpr(e.a)})`;
    case 'isfinite': return `isFinite(${printExpr(e.a)})`;
    case 'call': return `${e.helper}(${e.args.map(printExpr).join(', ')})`;
  }
}

function printLiteral(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return 'Infinity';
  if (v === -Infinity) return '(-Infinity)';
  if (Object.is(v, -0)) return '(-0)';
  return v < 0 ? `(${v})` : String(v);
}

export function printStmts(body: readonly Stmt[], ind: string): string {
  return body.map((s) => printStmt(s, ind)).join('');
}

function printStmt(s: Stmt, ind: string): string {
  switch (s.k) {
    case 'let': return `${ind}let ${s.name} = ${printExpr(s.init)};\n`;
    case 'assign': return `${ind}${s.name} ${s.op} ${printExpr(s.value)};\n`;
    case 'store': return `${ind}${s.arr}[${printExpr(s.index)}]${s.index2 ? `[${printExpr(s.index2)}]` : ''} = ${printExpr(s.value)};\n`;
    case 'localArray': return `${ind}const ${s.name} = new ${ARRAY_NAMES[s.dtype]}(${s.length});\n`;
    case 'if':
      return `${ind}if (${printExpr(s.c)}) {\n${printStmts(s.then, ind + '  ')}${ind}}${s.otherwise.length ? ` else {\n${printStmts(s.otherwise, ind + '  ')}${ind}}` : ''}\n`;
    case 'for': return `${ind}for (let ${s.v} = 0; ${s.v} < ${printExpr(s.bound)}; ${s.v}++) {\n${printStmts(s.body, ind + '  ')}${ind}}\n`;
    case 'while':
      return s.doWhile
        ? `${ind}let ${s.v} = 0;\n${ind}if (${s.v} < ${printExpr(s.bound)}) do {\n${ind}  ${s.v}++;\n${printStmts(s.body, ind + '  ')}${ind}} while (${s.v} < ${printExpr(s.bound)});\n`
        : `${ind}let ${s.v} = 0;\n${ind}while (${s.v} < ${printExpr(s.bound)}) {\n${ind}  ${s.v}++;\n${printStmts(s.body, ind + '  ')}${ind}}\n`;
    case 'break': return `${ind}break;\n`;
    case 'continue': return `${ind}continue;\n`;
    case 'return': return `${ind}return${s.value ? ` ${printExpr(s.value)}` : ''};\n`;
  }
}

export function printHelper(h: Helper): string {
  return `(${h.params.map((_, i) => `p${i}`).join(', ')}) => ${printExpr(h.body)}`;
}

/** The kernel as source text: `(a, b, out) => { … }`. */
export function printKernel(k: Kernel): string {
  return `(${k.params.map((p) => p.name).join(', ')}) => {\n${printStmts(k.body, '  ')}}`;
}

/** The signature string of the kernel (Numba's syntax). */
export function signatureOf(k: Kernel): string {
  const arg = (p: Kernel['params'][number]) => (p.shape === 'scalar' ? p.dtype : p.shape === 'row' ? `${p.dtype}[:]` : `${p.dtype}[:,:]`);
  return k.kind === 'vectorize' ? `${k.returns}(${k.params.map(arg).join(', ')})` : `void(${k.params.map(arg).join(', ')})`;
}
