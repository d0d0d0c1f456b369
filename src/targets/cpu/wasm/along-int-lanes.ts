/**
 * Loops along the row (along-rows.ts) over 8- and 16-bit integers in lanes of their width: 8
 * elements per vector in 16-bit lanes, 16 in 8-bit lanes, where that is exact — as element-wise
 * kernels run them (int-lanes.ts decides, emit-int-lanes.ts emits).
 *
 * The loop's body — `let`s, then one store `out[i] = v` — is an element-wise kernel in disguise:
 * each element read `a[i + c]` is an operand, each value the loop does not change is a scalar
 * operand, `v` is the result. So the body is written as such a kernel (one parameter per
 * distinct read and per such value, `return v`), int-lanes.ts plans it as it plans any
 * element-wise kernel (every value fits the lanes, or only wraps into a store that keeps the low
 * bits; saturating sums recognised), and the vector loop loads each read's 8 or 16 elements into
 * its parameter's lanes, runs the body and stores the result's lanes.
 */
import type { DType } from '../../../dtypes.js';
import type { Expr, Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';
import { ValType } from './encoder.js';
import type { FunctionEmitter, ModuleContext } from './emit-scalar.js';
import { IntLanesEmitter } from './emit-int-lanes.js';
import { type IntLanesPlan, intLanesPlan } from './int-lanes.js';
import { elementAddress, loadLanes, storeLanes } from './lane-memory.js';

const NARROW = new Set<DType>(['int8', 'uint8', 'uint8c', 'int16']);

/** A loop body as an element-wise kernel in narrow integer lanes. */
export interface NarrowBody {
  readonly plan: IntLanesPlan;
  /** The body as an element-wise kernel: parameters as {@link operands} say, `return` of the stored value. */
  readonly kernel: TypedKernel;
  /** Per parameter of {@link kernel}: the element `array[i + offset]` it stands for, or the value the loop does not change. */
  readonly operands: readonly ({ readonly array: Variable; readonly offset: number } | { readonly uniform: Expr })[];
  /** The array the body stores into. */
  readonly out: Variable;
}

/**
 * The body of a qualifying loop as an element-wise kernel in narrow lanes, or undefined where it
 * is not one (another statement than `let`s and a last store, an array wider than 16 bits, the
 * counter as a value) or int-lanes.ts finds its values need 32 bits.
 *
 * @param offsetOf - the constant `c` of an index `i + c`
 * @param varies - whether an expression changes from one iteration to the next
 */
export function narrowBody(body: readonly Stmt[], counter: Variable, offsetOf: (index: Expr) => number, varies: (x: Expr) => boolean, source: string): NarrowBody | undefined {
  const last = body[body.length - 1];
  if (last?.kind !== 'store' || body.slice(0, -1).some((s) => s.kind !== 'let')) return undefined;
  const dtypeOf = (a: Variable) => (a.type as { dtype: DType }).dtype;
  const params: Variable[] = [];
  const operands: NarrowBody['operands'][number][] = [];
  const reads = new Map<string, Variable>();
  let id = -1;
  const param = (type: DType, operand: NarrowBody['operands'][number]): Variable => {
    const v: Variable = { id: id--, name: `along${params.length}`, type };
    params.push(v);
    operands.push(operand);
    return v;
  };
  let fits = true;
  const rewrite = (x: Expr): Expr => {
    if (x.kind === 'const') return x;
    if (x.kind === 'var' && x.variable === counter) fits = false;
    if (x.kind === 'index') {
      const offset = offsetOf(x.indices[0]!);
      const key = `${x.array.id}@${offset}`;
      let v = reads.get(key);
      if (!v) reads.set(key, (v = param(dtypeOf(x.array), { array: x.array, offset })));
      return { kind: 'var', variable: v, type: x.type, loc: x.loc };
    }
    // A value the loop does not change, of a narrow type: a scalar operand (wider ones, such as
    // `int32(t)` of a uint8 `t`, are rebuilt around their narrow parts).
    if (!varies(x) && NARROW.has(x.type)) return { kind: 'var', variable: param(x.type, { uniform: x }), type: x.type, loc: x.loc };
    switch (x.kind) {
      case 'var':
        if (!varies(x)) fits = false;
        return x;
      case 'unary': return { ...x, arg: rewrite(x.arg) };
      case 'cast': return { ...x, value: rewrite(x.value) };
      case 'binary': case 'compare': case 'logical': return { ...x, left: rewrite(x.left), right: rewrite(x.right) };
      case 'select': return { ...x, cond: rewrite(x.cond), then: rewrite(x.then), otherwise: rewrite(x.otherwise) };
      case 'math': return { ...x, args: x.args.map(rewrite) };
      default:
        fits = false;
        return x;
    }
  };
  const lets = body.slice(0, -1) as Extract<Stmt, { kind: 'let' }>[];
  const stmts: Stmt[] = lets.map((s) => ({ ...s, init: rewrite(s.init) }));
  stmts.push({ kind: 'return', value: rewrite(last.value), loc: last.loc });
  const arrays = [last.array, ...operands.flatMap((o) => ('array' in o ? [o.array] : []))];
  if (!fits || !arrays.every((a) => NARROW.has(dtypeOf(a)))) return undefined;
  const kernel: TypedKernel = { name: 'along the row', params, returnType: dtypeOf(last.array), body: stmts, locals: lets.map((s) => s.variable), helpers: [], source };
  const plan = intLanesPlan(kernel);
  return typeof plan === 'string' ? undefined : { plan, kernel, operands, out: last.array };
}

/** Emits a narrow body's vector code: its uniform operands splatted once, then one vector of the step per {@link step}. */
export class NarrowAlongSteps {
  private readonly simd: IntLanesEmitter;
  private readonly result: number;
  readonly lanes: 16 | 8;

  constructor(private readonly e: FunctionEmitter, ctx: ModuleContext, private readonly body: NarrowBody, private readonly counter: number) {
    this.result = e.local(ValType.v128);
    this.simd = new IntLanesEmitter(e, ctx, this.result, body.plan);
    this.lanes = body.plan.lanes.bits === 16 ? 8 : 16;
  }

  hoistUniforms(): void {
    this.body.operands.forEach((o, p) => {
      if (!('uniform' in o)) return;
      this.e.expr(o.uniform);
      this.simd.splat();
      this.e.set(this.simd.varLocal(this.body.kernel.params[p]!));
    });
  }

  step(part: number): void {
    const e = this.e;
    const at = (a: Variable, offset: number) => elementAddress(e, e.arrays.get(a)!, this.counter, offset + part * this.lanes);
    this.body.operands.forEach((o, p) => {
      if (!('array' in o)) return;
      const offset = at(o.array, o.offset);
      loadLanes(e, e.arrays.get(o.array)!.dtype, this.lanes, offset);
      e.set(this.simd.varLocal(this.body.kernel.params[p]!));
    });
    const out = e.arrays.get(this.body.out)!;
    this.simd.begin(0, out.dtype);
    this.simd.body(this.body.kernel.body);
    const offset = at(this.body.out, 0);
    e.get(this.result);
    storeLanes(e, out.dtype, this.lanes, offset);
  }
}
