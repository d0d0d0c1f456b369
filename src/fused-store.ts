/**
 * `where` and output casts inside the kernel: a vectorize kernel of loop type T becomes a kernel
 * that stores straight into an output of another dtype, and only where a mask is true, so a call
 * on device arrays (gpu) needs no device temporary and no second (store) kernel.
 *
 * The typed kernel turns into a helper, called as it is (its own `return`s already convert to T),
 * and the new kernel is, in IR:
 *
 *     (x…)              => cast<to>(kernel(x…))                       // a cast only
 *     (x…, where)       => where ? cast<to>(kernel(x…)) : zero(to)    // an output the call allocates
 *     (x…, where, old)  => where ? cast<to>(kernel(x…)) : old         // a given `out` keeps its elements
 *
 * Converting to T first and then to `to` is what the two-pass store did (and what NumPy does: the
 * loop computes in T, the output is cast from T), so results are the same.
 */
import type { DType } from './dtypes.js';
import type { Expr, HelperFunction, Stmt, TypedKernel, Variable } from './compiler/ir.js';
import { convertConstant } from './compiler/constant-folding.js';

/**
 * The kernel that stores a vectorize kernel's result into an output of dtype `to`, masked.
 *
 * @param kernel - a typed vectorize kernel (scalar parameters, a dtype returned)
 * @param to - the output's dtype (a cast the call's `casting` already allowed)
 * @param mask - none; `'zero'`: a bool parameter, zeros where false; `'keep'`: a bool and the old value
 * @returns a typed kernel with parameters (inputs…, where?, old?) returning `to`
 * @example fuseStore(kernel, 'int16', 'keep') // (x, where, old) => where ? int16(kernel(x)) : old
 */
export function fuseStore(kernel: TypedKernel, to: DType, mask: 'none' | 'zero' | 'keep'): TypedKernel {
  if (kernel.returnType === 'void') throw new Error('internal: fuseStore takes a vectorize kernel');
  const loopType = kernel.returnType;
  const loc = kernel.body[0]?.loc ?? { line: 1, column: 1 };
  let nextId = 1 + Math.max(0, ...[...kernel.params, ...kernel.locals].map((v) => v.id));
  const fresh = (name: string, type: DType): Variable => ({ id: nextId++, name, type });
  const params = kernel.params.map((p) => fresh(p.name, p.type as DType));
  const where = mask !== 'none' ? fresh('where', 'bool') : undefined;
  const old = mask === 'keep' ? fresh('old', to) : undefined;

  const taken = new Set(kernel.helpers.map((h) => h.name));
  let name = 'kernel';
  for (let k = 1; taken.has(name); k++) name = `kernel_${k}`;
  const helper: HelperFunction = {
    name, params: kernel.params, returnType: loopType, body: kernel.body, locals: kernel.locals, writesParam: kernel.params.map(() => false),
  };
  const read = (v: Variable): Expr => ({ kind: 'var', variable: v, type: v.type as DType, loc });
  const call: Expr = { kind: 'call', helper, args: params.map(read), type: loopType, loc };
  const stored: Expr = to === loopType ? call : { kind: 'cast', value: call, type: to, loc };
  let body: Stmt[];
  if (!where) body = [{ kind: 'return', value: stored, loc }];
  else {
    const otherwise: Expr = old ? read(old) : { kind: 'const', value: convertConstant(0, to), type: to, loc };
    body = [{ kind: 'if', cond: read(where), then: [{ kind: 'return', value: stored, loc }], otherwise: [{ kind: 'return', value: otherwise, loc }], loc }];
  }
  return {
    name: kernel.name,
    params: [...params, ...(where ? [where] : []), ...(old ? [old] : [])],
    returnType: to,
    body,
    locals: [],
    helpers: [...kernel.helpers, helper],
    ...(kernel.fastmath ? { fastmath: true } : {}),
    source: kernel.source,
  };
}
