/**
 * Composing element-wise kernels around one guvectorize kernel: the IR half of `fuse` for chains
 * such as `scale(normalize(x), w)` (`(n)->(n)`, then element-wise over its rows) or
 * `rowSum(square(x))` (element-wise, then `(n)->()`). The fused kernel is the gufunc's body with
 *
 * - every read of an input that an element-wise step computes (`a[i]`) replaced by that step
 *   applied to its own inputs at the same core index (`square(x[i])`), as a call of the step's
 *   kernel kept as a helper: expressions have no side effects here, so evaluating the step where
 *   the value is read, as often as it is read, gives the value the separate call stored;
 * - every store into its output (`out[i] = v`) followed by the element-wise steps after it, inlined
 *   at that store with the value rounded to the gufunc's output dtype first (what storing it did),
 *   and the last step's result stored instead.
 *
 * Nothing is reordered: each step computes what its separate call computed for that element, in
 * its dtypes, so the bits are the separate calls'. What this cannot express — the gufunc reading
 * back its own output, or passing a computed input or its output whole to a helper — the planner
 * refuses before composing (`gufuncUses`).
 */
import type { DType } from '../dtypes.js';
import { type Argument, type Expr, isArrayType, type Stmt, type TypedKernel, type ValueType, type Variable } from './ir.js';
import { forEachStmt } from './ir-walk.js';
import { IrMapper, KernelBuilder } from './compose.js';

/** Where a value comes from: a parameter of the fused kernel, an element-wise step, or the gufunc's output. */
export type GufuncInput = { readonly kind: 'param'; readonly index: number } | { readonly kind: 'step'; readonly index: number } | { readonly kind: 'gufunc' };

/** An element-wise step: a vectorize kernel and its arguments. */
export interface ElementwiseStep {
  readonly kernel: TypedKernel;
  readonly inputs: readonly GufuncInput[];
}

/** What composeAroundGufunc fuses. */
export interface GufuncComposition {
  /** The fused kernel's input parameters: arrays (core slices) or scalars. */
  readonly params: readonly { readonly name: string; readonly type: ValueType }[];
  /** The element-wise steps, each after the steps it reads. */
  readonly steps: readonly ElementwiseStep[];
  /** The gufunc's kernel (typed for this call's core sizes; one output) and its inputs (none is `gufunc`). */
  readonly gufunc: { readonly kernel: TypedKernel; readonly inputs: readonly GufuncInput[] };
  /** The value the fused kernel writes: the gufunc's output or a step after it. */
  readonly result: GufuncInput;
  /** The kernel's name, for messages (`square > rowSum`). */
  readonly name: string;
}

/**
 * How a gufunc kernel uses its parameters, for the planner: whether it reads back its output,
 * and which parameters it uses other than by indexing and `length` (a whole array passed to a
 * helper, or copied to a variable).
 */
export function gufuncUses(kernel: TypedKernel): { readsOutput: boolean; wholeUses: Set<number> } {
  const nin = kernel.params.length - 1;
  const out = kernel.params[nin]!;
  const index = new Map(kernel.params.map((p, i) => [p, i]));
  let readsOutput = false;
  const wholeUses = new Set<number>();
  const visitExpr = (e: Expr | Argument): void => {
    switch (e.kind) {
      case 'index':
        if (e.array === out) readsOutput = true;
        e.indices.forEach(visitExpr);
        return;
      case 'array-ref': case 'var': {
        const v = e.kind === 'var' ? e.variable : e.array;
        const i = index.get(v);
        if (i !== undefined && (e.kind === 'array-ref' || isArrayType(v.type))) wholeUses.add(i);
        return;
      }
      case 'const': case 'dim': return;
      case 'unary': return visitExpr(e.arg);
      case 'binary': case 'compare': case 'logical': visitExpr(e.left); visitExpr(e.right); return;
      case 'select': visitExpr(e.cond); visitExpr(e.then); visitExpr(e.otherwise); return;
      case 'cast': return visitExpr(e.value);
      case 'math': e.args.forEach(visitExpr); return;
      case 'call': e.args.forEach(visitExpr); return;
    }
  };
  forEachStmt(kernel.body, (s) => {
    switch (s.kind) {
      case 'let': visitExpr(s.init); break;
      case 'assign': visitExpr(s.value); break;
      case 'store': s.indices.forEach(visitExpr); visitExpr(s.value); break;
      case 'if': visitExpr(s.cond); break;
      case 'loop': if (s.cond) visitExpr(s.cond); break;
      case 'return': if (s.value) visitExpr(s.value); break;
      case 'call': visitExpr(s.call); break;
      default: break;
    }
  });
  return { readsOutput, wholeUses };
}

/**
 * The fused guvectorize kernel: parameters (params…, out), out of the result's dtype and the
 * gufunc's output rank.
 *
 * @param c - the parameters, steps, gufunc and result
 * @returns a typed guvectorize kernel returning void
 * @throws Error (internal) for a use the planner should have refused (gufuncUses)
 * @example composeAroundGufunc({ params, steps: [square], gufunc: { kernel: rowSum, inputs: [{ kind: 'step', index: 0 }] }, result: { kind: 'gufunc' }, name: 'square > rowSum' })
 */
export function composeAroundGufunc(c: GufuncComposition): TypedKernel {
  const g = c.gufunc.kernel;
  const nin = g.params.length - 1;
  const gOut = g.params[nin]!;
  const outType = gOut.type;
  if (!isArrayType(outType)) throw new Error('internal: a gufunc output is an array');
  const gDtype = outType.dtype;
  const b = new KernelBuilder();
  b.addTables(g);
  const paramVars = c.params.map((p) => b.fresh(p.name, p.type));
  const resultDtype = dtypeOf(c, c.result, outType.dtype);
  const out = b.fresh('out', { kind: 'array', dtype: resultDtype, ndim: outType.ndim });
  const body: Stmt[] = [];

  /** A value at a core index of its context (scalars and `()` contexts ignore it), as an expression. */
  const valueAt = (input: GufuncInput, idx: readonly Expr[]): Expr => {
    if (input.kind === 'gufunc') throw new Error('internal: the gufunc output is read at its stores only');
    if (input.kind === 'param') {
      const p = paramVars[input.index]!;
      if (!isArrayType(p.type)) return b.read(p);
      return { kind: 'index', array: p, indices: p.type.ndim === idx.length ? idx : [zero], type: p.type.dtype, loc: b.loc };
    }
    const step = c.steps[input.index]!;
    const helper = b.kernelHelper(step.kernel);
    const args = step.inputs.map((a, i) => b.cast(valueAt(a, idx), step.kernel.params[i]!.type as DType));
    return { kind: 'call', helper, args, type: step.kernel.returnType as DType, loc: b.loc };
  };
  const zero: Expr = { kind: 'const', value: 0, type: 'int32', loc: b.loc };

  // The gufunc's inputs: a parameter is the gufunc's parameter itself; a computed `()` input is a
  // local bound once; a computed core input is read through `valueAt` where the gufunc indexes it.
  const vars = new Map<Variable, Variable>();
  const computed = new Map<Variable, { input: GufuncInput; local?: Variable; dims?: Variable }>();
  g.params.slice(0, nin).forEach((p, k) => {
    const input = c.gufunc.inputs[k]!;
    if (input.kind === 'param') {
      vars.set(p, paramVars[input.index]!);
      return;
    }
    const dtype = isArrayType(p.type) ? p.type.dtype : p.type;
    const scalar = !isArrayType(p.type) || coreRank(c, input) === 0;
    if (scalar) {
      const local = b.local(`${g.name}_${p.name}`, dtype);
      body.push({ kind: 'let', variable: local, init: b.cast(valueAt(input, []), dtype), loc: b.loc });
      computed.set(p, { input, local });
    } else computed.set(p, { input, dims: arrayParamOf(c, input, paramVars) });
  });
  const writesThrough = c.result.kind !== 'gufunc';
  if (!writesThrough) vars.set(gOut, out);

  const after = stepsAfterGufunc(c);
  const mapVar = (v: Variable): Variable => {
    let copy = vars.get(v);
    if (!copy) {
      copy = b.fresh(`${g.name}_${v.name}`, v.type);
      if (!isArrayType(v.type)) b.locals.push(copy);
      vars.set(v, copy);
    }
    return copy;
  };

  class AroundGufunc extends IrMapper {
    protected override expr(e: Expr): Expr {
      if (e.kind === 'index' && computed.has(e.array)) {
        const { input, local } = computed.get(e.array)!;
        if (local) return b.read(local);
        return b.cast(valueAt(input, e.indices.map((i) => this.expr(i))), e.type);
      }
      if (e.kind === 'dim' && computed.has(e.array)) {
        const { dims } = computed.get(e.array)!;
        return dims ? { ...e, array: dims } : { kind: 'const', value: 1, type: e.type, loc: e.loc };
      }
      if (e.kind === 'var' && computed.get(e.variable)?.local) return b.read(computed.get(e.variable)!.local!);
      return super.expr(e);
    }

    protected override expand(s: Stmt): Stmt[] {
      if (s.kind !== 'store' || s.array !== gOut || !writesThrough) return super.expand(s);
      // The gufunc's value rounded to its output dtype (what its store did), then the steps after it.
      const indices = s.indices.map((i) => this.expr(i));
      const stmts: Stmt[] = [];
      const stored = b.local(`${g.name}_stored`, gDtype);
      stmts.push({ kind: 'let', variable: stored, init: b.cast(this.expr(s.value), gDtype), loc: s.loc });
      const results = new Map<number, Variable>();
      const at = (input: GufuncInput): Expr => {
        if (input.kind === 'gufunc') return b.read(stored);
        const known = input.kind === 'step' ? results.get(input.index) : undefined;
        return known ? b.read(known) : valueAt(input, indices);
      };
      for (const k of after) {
        const step = c.steps[k]!;
        results.set(k, b.inline(step.kernel, step.inputs.map(at), stmts, `${step.kernel.name}${k + 1}_`));
      }
      stmts.push({ kind: 'store', array: out, indices, value: b.cast(at(c.result), resultDtype), loc: s.loc });
      return stmts;
    }
  }
  const mapper = new AroundGufunc(mapVar, (h) => b.helperCopy(h));
  body.push(...mapper.stmts(g.body));
  const kernels = [...c.steps.map((s) => s.kernel), g];
  const fastmath = kernels.some((k) => k.fastmath);
  return {
    name: c.name,
    params: [...paramVars, out],
    returnType: 'void',
    body,
    locals: b.locals,
    helpers: b.helpers,
    ...(b.tables.length ? { tables: b.tables } : {}),
    source: kernels.map((k) => k.source).join('\n'),
    ...(fastmath ? { fastmath: true } : {}),
  };
}

/** The dtype of a value of the chain. */
function dtypeOf(c: GufuncComposition, input: GufuncInput, gufuncDtype: DType): DType {
  if (input.kind === 'gufunc') return gufuncDtype;
  if (input.kind === 'step') return c.steps[input.index]!.kernel.returnType as DType;
  const t = c.params[input.index]!.type;
  return isArrayType(t) ? t.dtype : t;
}

/** The rank of the core slices a computed value is read over: that of the array parameters it reads (0 when it reads none). */
function coreRank(c: GufuncComposition, input: GufuncInput): number {
  if (input.kind === 'param') {
    const t = c.params[input.index]!.type;
    return isArrayType(t) ? t.ndim : 0;
  }
  if (input.kind === 'gufunc') return 0;
  return Math.max(0, ...c.steps[input.index]!.inputs.map((i) => coreRank(c, i)));
}

/** An array parameter a computed value reads, whose core dimensions are the value's (for `x.length`). */
function arrayParamOf(c: GufuncComposition, input: GufuncInput, paramVars: readonly Variable[]): Variable {
  if (input.kind === 'param') return paramVars[input.index]!;
  if (input.kind === 'step') {
    for (const i of c.steps[input.index]!.inputs) {
      const t = i.kind === 'param' ? c.params[i.index]!.type : undefined;
      if (t && isArrayType(t) && t.ndim > 0) return paramVars[(i as { index: number }).index]!;
      if (i.kind === 'step' && coreRank(c, i) > 0) return arrayParamOf(c, i, paramVars);
    }
  }
  throw new Error('internal: a computed core input reads no array');
}

/** The steps that depend on the gufunc's output (run at its stores), in order. */
function stepsAfterGufunc(c: GufuncComposition): number[] {
  const after = new Set<number>();
  c.steps.forEach((step, k) => {
    if (step.inputs.some((i) => i.kind === 'gufunc' || (i.kind === 'step' && after.has(i.index)))) after.add(k);
  });
  return [...after];
}
