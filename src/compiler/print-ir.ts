/**
 * The typed IR as text, for contributors: what a kernel became after typing and after each pass
 * (`UFUNC_DUMP_IR=1`, passes/index.ts). One statement a line, JS-like, every value with its type:
 *
 *     kernel saxpy(a: float32, x: float32, y: float32) -> float32
 *       return ((a:float32 * x:float32):float32 + y:float32):float32
 *
 * Variables print as `name#id` where two share a name (shadowing, helper specialisations).
 */
import type { Argument, Expr, HelperFunction, Stmt, TypedKernel, ValueType, Variable } from './ir.js';
import { isArrayType } from './ir.js';

/**
 * Prints a typed kernel and its helpers.
 *
 * @param kernel - the kernel
 * @returns the text, one statement a line, ending with a newline
 * @example console.error(printKernel(kernel));
 */
export function printKernel(kernel: TypedKernel): string {
  const names = new Namer([...kernel.params, ...kernel.locals, ...kernel.helpers.flatMap((h) => [...h.params, ...h.locals])]);
  let text = '';
  for (const h of kernel.helpers) text += printFunction('helper', h.name, h.params, h.returnType, h.body, names);
  return text + printFunction('kernel', kernel.name, kernel.params, kernel.returnType, kernel.body, names);
}

function printFunction(what: string, name: string, params: readonly Variable[], returnType: ValueType | 'void', body: readonly Stmt[], names: Namer): string {
  const head = `${what} ${name}(${params.map((p) => `${names.of(p)}: ${typeText(p.type)}`).join(', ')}) -> ${returnType === 'void' ? 'void' : typeText(returnType)}\n`;
  return head + statements(body, '  ', names);
}

function typeText(t: ValueType): string {
  return isArrayType(t) ? `${t.dtype}[${Array(t.ndim).fill(':').join(',')}]` : t;
}

/** Source names, with `#id` added where several variables share one. */
class Namer {
  private readonly shared = new Set<string>();

  constructor(variables: readonly Variable[]) {
    const seen = new Map<string, number>();
    for (const v of variables) {
      if (seen.has(v.name) && seen.get(v.name) !== v.id) this.shared.add(v.name);
      seen.set(v.name, v.id);
    }
  }

  of(v: Variable): string {
    return this.shared.has(v.name) ? `${v.name}#${v.id}` : v.name;
  }
}

function statements(body: readonly Stmt[], indent: string, names: Namer): string {
  return body.map((s) => statement(s, indent, names)).join('');
}

function statement(s: Stmt, indent: string, names: Namer): string {
  const e = (x: Expr) => expression(x, names);
  const inner = indent + '  ';
  switch (s.kind) {
    case 'let': return `${indent}let ${names.of(s.variable)}: ${typeText(s.variable.type)} = ${e(s.init)}\n`;
    case 'local-array': return `${indent}let ${names.of(s.variable)} = new ${typeText(s.variable.type)}(${s.length})\n`;
    case 'assign': return `${indent}${names.of(s.variable)} = ${e(s.value)}\n`;
    case 'store': return `${indent}${names.of(s.array)}[${s.indices.map(e).join(', ')}] = ${e(s.value)}\n`;
    case 'if': {
      const otherwise = s.otherwise.length ? `${indent}} else {\n${statements(s.otherwise, inner, names)}` : '';
      return `${indent}if (${e(s.cond)}) {\n${statements(s.then, inner, names)}${otherwise}${indent}}\n`;
    }
    case 'loop': {
      const parts = (list: readonly Stmt[]) => list.map((x) => statement(x, '', names).trim()).join('; ');
      const cond = s.cond ? e(s.cond) : '';
      const head = s.testFirst ? `loop (${parts(s.init)}; ${cond}; ${parts(s.update)})` : `do-loop (${parts(s.init)}; test last: ${cond}; ${parts(s.update)})`;
      return `${indent}${head} {\n${statements(s.body, inner, names)}${indent}}\n`;
    }
    case 'break': return `${indent}break\n`;
    case 'continue': return `${indent}continue\n`;
    case 'return': return `${indent}return${s.value ? ` ${e(s.value)}` : ''}\n`;
    case 'call': return `${indent}${e(s.call)}\n`;
    case 'draw': return `${indent}let ${names.of(s.variable)}: ${typeText(s.variable.type)} = Math.random()\n`;
  }
}

function argument(a: Argument, names: Namer): string {
  return a.kind === 'array-ref' ? `&${names.of(a.array)}` : expression(a, names);
}

function expression(x: Expr, names: Namer): string {
  const e = (y: Expr) => expression(y, names);
  switch (x.kind) {
    case 'const': return `${typeof x.value === 'bigint' ? `${x.value}n` : String(x.value)}:${x.type}`;
    case 'var': return `${names.of(x.variable)}:${x.type}`;
    case 'unary': return `(${x.op}${e(x.arg)}):${x.type}`;
    case 'binary': case 'logical': return `(${e(x.left)} ${x.op} ${e(x.right)}):${x.type}`;
    case 'compare': return `(${e(x.left)} ${x.op} ${e(x.right)}):bool`;
    case 'select': return `(${e(x.cond)} ? ${e(x.then)} : ${e(x.otherwise)}):${x.type}`;
    case 'cast': return `${x.type}(${e(x.value)})`;
    case 'math': return `Math.${x.fn}${x.fastmath ? '[fastmath]' : ''}(${x.args.map(e).join(', ')}):${x.type}`;
    case 'call': return `${(x.helper as HelperFunction).name}(${x.args.map((a) => argument(a, names)).join(', ')}):${x.type}`;
    case 'index': return `${names.of(x.array)}[${x.indices.map(e).join(', ')}]:${x.type}`;
    case 'dim': return `${names.of(x.array)}.shape[${x.axis}]:int32`;
  }
}
