/**
 * Which typed kernels the Wasm engine compiles, and why not the others. Checked once per typed
 * kernel; a kernel it refuses runs on the JS engine, and `explain` reports the reason.
 */
import { isBigInt } from '../../../dtypes.js';
import type { Expr, Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';
import { isArrayType } from '../../../compiler/ir.js';

/** Undefined where the Wasm engine can compile the kernel, else the reason it cannot (a sentence). */
export function wasmRefusal(kernel: TypedKernel): string | undefined {
  const table = kernel.tables?.[0];
  if (table) return `it reads the lookup table \`${table.variable.name}\` from \`env\`, which only the JS engine places beside the kernel so far.`;
  const wide = (v: Variable) => (isArrayType(v.type) ? isBigInt(v.type.dtype) : isBigInt(v.type));
  const vars = [...kernel.params, ...kernel.locals, ...kernel.helpers.flatMap((h) => [...h.params, ...h.locals])];
  const big = vars.find(wide);
  if (big) return `\`${big.name}\` is a 64-bit integer, which kernels hold as a JS bigint; the Wasm engine computes in 32 and 64-bit floats and 32-bit integers only.`;
  if (kernel.returnType !== 'void' && isBigInt(kernel.returnType)) return 'the kernel returns a 64-bit integer (a JS bigint).';
  // Philox in Wasm would need 64-bit products in lanes; the JS engine draws the same numbers.
  if (kernel.randomStream) return 'the kernel calls `Math.random()`, which the JS engine draws (compiler/random-stream.ts).';
  let found: string | undefined;
  const visitExpr = (e: Expr): void => {
    if (found) return;
    if (isBigInt(e.type)) found = `an expression at kernel line ${e.loc.line}:${e.loc.column} is a 64-bit integer (a JS bigint).`;
    switch (e.kind) {
      case 'unary': case 'cast': visitExpr(e.kind === 'cast' ? e.value : e.arg); break;
      case 'binary': case 'compare': case 'logical': visitExpr(e.left); visitExpr(e.right); break;
      case 'select': visitExpr(e.cond); visitExpr(e.then); visitExpr(e.otherwise); break;
      case 'math': e.args.forEach(visitExpr); break;
      case 'call': for (const a of e.args) if (a.kind !== 'array-ref') visitExpr(a); break;
      case 'index': e.indices.forEach(visitExpr); break;
      default: break;
    }
  };
  const visit = (list: readonly Stmt[]): void => {
    for (const s of list) {
      switch (s.kind) {
        case 'let': visitExpr(s.init); break;
        case 'assign': visitExpr(s.value); break;
        case 'store': s.indices.forEach(visitExpr); visitExpr(s.value); break;
        case 'if': visitExpr(s.cond); visit(s.then); visit(s.otherwise); break;
        case 'loop': visit(s.init); if (s.cond) visitExpr(s.cond); visit(s.update); visit(s.body); break;
        case 'return': if (s.value) visitExpr(s.value); break;
        case 'call': visitExpr(s.call); break;
        default: break;
      }
    }
  };
  visit(kernel.body);
  for (const h of kernel.helpers) visit(h.body);
  return found;
}
