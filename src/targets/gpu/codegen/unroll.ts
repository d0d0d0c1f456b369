/**
 * Straight-line code for kernels that work on small arrays of known length (the gpu's form of a
 * Numba kernel with `np.empty(40)` scratch rows): helpers called for their effect are inlined,
 * core sizes the layout compiles in become constants, and loops with a constant trip count whose
 * counter indexes an array are unrolled, so that every index of such an array is a constant.
 *
 * Why: a function-scope WGSL array indexed at run time lives in the invocation's memory (local
 * memory on NVIDIA, which competes with the workgroup tiles for L1), not in registers. With every
 * index constant, the emitter declares a local array as scalars (shader-module.ts) and a private
 * row is indexed by literals, so both end up in registers. The Lorenz-96 RK4 step (a helper
 * called four times, two local rows of 40) is the benchmark (bench/local-arrays.ts).
 *
 * Every transformation keeps the kernel's meaning, statement for statement and in order: an
 * inlined helper's scalar parameters become locals initialised with the arguments (evaluated in
 * order, as a call evaluates them), its array parameters become the caller's arrays; an unrolled
 * loop is its body once per iteration with the counter replaced by its value, and the variables
 * the body declares renamed per copy. Nothing is unrolled past a budget of code size
 * ({@link MAX_TRIPS}, {@link MAX_UNROLLED_NODES} a loop, {@link MAX_KERNEL_NODES} the kernel), and a loop that could leave early (`break`,
 * `continue`, `return`) or changes its counter in its body is left as it is.
 */
import type { Argument, Expr, HelperFunction, Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';
import { childExprs, directExprs, forEachExpr, forEachStmt } from '../../../compiler/ir-walk.js';
import { constantValue, foldCompare } from '../../../compiler/constant-folding.js';
import { propagateConstants } from '../../../compiler/passes/constant-propagation.js';

/** Most iterations a loop is unrolled for. */
export const MAX_TRIPS = 64;
/** Most IR nodes one unrolled loop may become (its body's nodes times its trip count). */
export const MAX_UNROLLED_NODES = 4096;
/** Most IR nodes the kernel may grow to by unrolling (nested loops multiply). */
export const MAX_KERNEL_NODES = 16384;

let unrolling = true;

/**
 * Turns the transformation off or on (for A/B benchmarks: bench/local-arrays.ts). Affects shaders
 * generated afterwards; compiled pipelines are cached per kernel, so compare fresh ufuncs.
 */
export function setLoopUnrolling(on: boolean): void {
  unrolling = on;
}

/**
 * The kernel as straight-line code where it can be (see the module comment).
 *
 * @param kernel - the typed kernel
 * @param knownLength - the length of axis `axis` of a kernel parameter where the layout compiles it in (a staging tile's rows), else undefined
 * @returns the same kernel when nothing applies, else the transformed one
 */
export function unrollForLayout(kernel: TypedKernel, knownLength: (param: Variable, axis: number) => number | undefined): TypedKernel {
  if (!unrolling) return kernel;
  const locals = new Set(kernel.locals);
  const fresh = new Fresh(kernel);
  let body = inlineCalls(kernel.body, fresh, locals, 0);
  const lengths = new Map<Variable, readonly number[]>();
  kernel.params.forEach((p) => {
    if (typeof p.type !== 'object') return;
    const dims = [...Array(p.type.ndim).keys()].map((a) => knownLength(p, a));
    if (dims.every((d) => d !== undefined)) lengths.set(p, dims as number[]);
  });
  let helpers = kernel.helpers;
  for (let round = 0; round < 4; round++) {
    forEachStmt(body, (s) => s.kind === 'local-array' && lengths.set(s.variable, [s.length]));
    body = mapExprs(body, (e) => {
      const known = e.kind === 'dim' ? lengths.get(e.array)?.[e.axis] : undefined;
      return known === undefined ? e : { kind: 'const', value: known, type: e.type, loc: e.loc };
    });
    const folded = propagateConstants({ ...kernel, body, locals: [...locals], helpers });
    ({ body, helpers } = folded);
    const keep = new Set(folded.locals);
    for (const v of locals) if (!keep.has(v)) locals.delete(v);
    const budget = { nodes: MAX_KERNEL_NODES - nodeCount(body) };
    const unrolled = unrollLoops(body, fresh, locals, budget);
    if (unrolled === body) break;
    body = unrolled;
  }
  if (body === kernel.body) return kernel;
  return { ...kernel, body, locals: [...locals], helpers: reachableHelpers(body, helpers) };
}

/** New variables, numbered after the kernel's. */
class Fresh {
  private next: number;
  constructor(kernel: TypedKernel) {
    const all = [...kernel.params, ...kernel.locals, ...kernel.helpers.flatMap((h) => [...h.params, ...h.locals])];
    this.next = 1 + Math.max(0, ...all.map((v) => v.id));
  }
  copy(v: Variable): Variable {
    return { id: this.next++, name: v.name, type: v.type };
  }
}

/** The helpers that calls in `body` (and in those helpers) still name, in the kernel's order. */
function reachableHelpers(body: readonly Stmt[], helpers: readonly HelperFunction[]): HelperFunction[] {
  const used = new Set<HelperFunction>();
  const visit = (list: readonly Stmt[]) =>
    forEachExpr(list, (e) => {
      if (e.kind !== 'call' || used.has(e.helper)) return;
      used.add(e.helper);
      visit(e.helper.body);
    });
  visit(body);
  return helpers.filter((h) => used.has(h));
}

// ------------------------------------------------------------------ inlining

/** Helpers inlined inside helpers, at most this deep (lowering refuses recursion; this is a guard). */
const MAX_INLINE_DEPTH = 16;

/**
 * Statement calls of helpers that never `return` inlined (recursively): their array parameters
 * become the caller's arrays, so their lengths, and the indices into them, become known.
 */
function inlineCalls(body: readonly Stmt[], fresh: Fresh, locals: Set<Variable>, depth: number): readonly Stmt[] {
  if (depth > MAX_INLINE_DEPTH) return body;
  return mapStmts(body, (s) => {
    if (s.kind !== 'call' || !inlinable(s.call.helper)) return undefined;
    const { helper, args } = s.call;
    const renames = new Map<Variable, Variable>();
    const prelude: Stmt[] = [];
    helper.params.forEach((p, k) => {
      const arg = args[k]!;
      if (arg.kind === 'array-ref') {
        renames.set(p, arg.array);
        return;
      }
      const v = fresh.copy(p);
      renames.set(p, v);
      locals.add(v);
      prelude.push({ kind: 'let', variable: v, init: arg, loc: s.loc });
    });
    for (const v of helper.locals) {
      const copy = fresh.copy(v);
      renames.set(v, copy);
      locals.add(copy);
    }
    // Local arrays are declared by statements, not listed in `locals`: renamed too.
    forEachStmt(helper.body, (t) => {
      if (t.kind === 'local-array' && !renames.has(t.variable)) renames.set(t.variable, fresh.copy(t.variable));
    });
    return inlineCalls([...prelude, ...renameVariables(helper.body, renames)], fresh, locals, depth + 1);
  });
}

/** A helper whose body can replace its call: void, and it never returns early. */
function inlinable(helper: HelperFunction): boolean {
  if (helper.returnType !== 'void') return false;
  let returns = false;
  forEachStmt(helper.body, (s) => {
    if (s.kind === 'return') returns = true;
  });
  return !returns;
}

// ------------------------------------------------------------------ unrolling

type Loop = Extract<Stmt, { kind: 'loop' }>;

/** Every loop of `body` that qualifies unrolled, outermost first (copies are looked at next round). */
function unrollLoops(body: readonly Stmt[], fresh: Fresh, locals: Set<Variable>, budget: { nodes: number }): readonly Stmt[] {
  return mapStmts(body, (s) => {
    if (s.kind !== 'loop') return undefined;
    const copies = unrolled(s, fresh, locals, budget);
    if (copies) return copies;
    const inner = unrollLoops(s.body, fresh, locals, budget);
    return inner === s.body ? undefined : [{ ...s, body: inner }];
  });
}

/** The loop as one copy of its body per iteration, or undefined when it does not qualify. */
function unrolled(loop: Loop, fresh: Fresh, locals: Set<Variable>, budget: { nodes: number }): Stmt[] | undefined {
  const counter = countedLoop(loop);
  if (!counter || !indexesWith(loop.body, counter.variable) || leavesEarly(loop.body) || assigns(loop.body, counter.variable)) return undefined;
  const values = tripValues(loop, counter);
  const size = nodeCount(loop.body);
  if (!values || values.length * size > MAX_UNROLLED_NODES || (values.length - 1) * size > budget.nodes) return undefined;
  budget.nodes -= (values.length - 1) * size;
  const out: Stmt[] = [];
  for (const value of values) {
    const renames = new Map<Variable, Variable>();
    forEachStmt(loop.body, (t) => {
      const declared = declaredBy(t);
      if (!declared || renames.has(declared)) return;
      const copy = fresh.copy(declared);
      renames.set(declared, copy);
      if (locals.has(declared)) locals.add(copy);
    });
    const constant: Expr = { kind: 'const', value, type: counter.variable.type as Expr['type'], loc: loop.loc };
    out.push(...substitute(renameVariables(loop.body, renames), counter.variable, constant));
  }
  locals.delete(counter.variable);
  for (const v of declaredIn(loop.body)) locals.delete(v);
  return out;
}

/** `for (let i = c; i OP bound; i = i ± step)` with constant c, bound and step. */
function countedLoop(loop: Loop): { variable: Variable; start: Expr } | undefined {
  if (!loop.testFirst || loop.init.length !== 1 || loop.update.length !== 1 || !loop.cond) return undefined;
  const [init] = loop.init;
  const [update] = loop.update;
  if (init!.kind !== 'let') return undefined;
  if (update!.kind !== 'assign' || update!.variable !== init!.variable) return undefined;
  return { variable: init!.variable, start: init!.init };
}

/** The counter's value at each iteration, or undefined when not constant or more than MAX_TRIPS. */
function tripValues(loop: Loop, counter: { variable: Variable; start: Expr }): number[] | undefined {
  let value = constantValue(counter.start);
  const values: number[] = [];
  const update = loop.update[0] as Extract<Stmt, { kind: 'assign' }>;
  for (;;) {
    if (value === undefined) return undefined;
    const at: Expr = { kind: 'const', value, type: counter.variable.type as Expr['type'], loc: loop.loc };
    const test = testValue(substituteExpr(loop.cond!, counter.variable, at));
    if (test === undefined) return undefined;
    if (!test) return values;
    if (values.length === MAX_TRIPS) return undefined;
    values.push(value);
    value = constantValue(substituteExpr(update.value, counter.variable, at));
  }
}

/** A loop test on constants, as the cpu evaluates it; undefined when not constant. */
function testValue(e: Expr): boolean | undefined {
  if (e.kind === 'const') return typeof e.value === 'boolean' ? e.value : undefined;
  if (e.kind !== 'compare') return undefined;
  const [a, b] = [constantValue(e.left), constantValue(e.right)];
  return a === undefined || b === undefined ? undefined : foldCompare(e.op, a, b);
}

/** Whether `v` appears in an index of an array read or store in `body`. */
function indexesWith(body: readonly Stmt[], v: Variable): boolean {
  let found = false;
  const inIndex = (e: Expr) => mentions(e, v) && (found = true);
  forEachStmt(body, (s) => s.kind === 'store' && s.indices.forEach(inIndex));
  forEachExpr(body, (e) => e.kind === 'index' && e.indices.forEach(inIndex));
  return found;
}

function mentions(e: Expr, v: Variable): boolean {
  return (e.kind === 'var' && e.variable === v) || childExprs(e).some((c) => mentions(c, v));
}

/** Whether `body` may leave the loop around it early (a `break`/`continue` not in a nested loop, or any `return`). */
function leavesEarly(body: readonly Stmt[]): boolean {
  return body.some((s) => {
    switch (s.kind) {
      case 'break': case 'continue': case 'return': return true;
      case 'if': return leavesEarly(s.then) || leavesEarly(s.otherwise);
      case 'loop': {
        let returns = false;
        forEachStmt(s.body, (t) => t.kind === 'return' && (returns = true));
        return returns;
      }
      default: return false;
    }
  });
}

function assigns(body: readonly Stmt[], v: Variable): boolean {
  let found = false;
  forEachStmt(body, (s) => s.kind === 'assign' && s.variable === v && (found = true));
  return found;
}

function declaredBy(s: Stmt): Variable | undefined {
  return s.kind === 'let' || s.kind === 'local-array' || s.kind === 'draw' ? s.variable : undefined;
}

function declaredIn(body: readonly Stmt[]): Variable[] {
  const out: Variable[] = [];
  forEachStmt(body, (s) => {
    const v = declaredBy(s);
    if (v) out.push(v);
  });
  return out;
}

function nodeCount(body: readonly Stmt[]): number {
  let n = 0;
  forEachStmt(body, () => n++);
  forEachExpr(body, () => n++);
  return n;
}

// ------------------------------------------------------------------ rewriting

/** `body` with each statement `f` returns a replacement for (a list) replaced, nested ones included. */
function mapStmts(body: readonly Stmt[], f: (s: Stmt) => readonly Stmt[] | undefined): readonly Stmt[] {
  let changed = false;
  const out: Stmt[] = [];
  for (const s of body) {
    const replaced = f(s);
    if (replaced) {
      changed = true;
      out.push(...replaced);
      continue;
    }
    let t: Stmt = s;
    if (s.kind === 'if') {
      const [then, otherwise] = [mapStmts(s.then, f), mapStmts(s.otherwise, f)];
      if (then !== s.then || otherwise !== s.otherwise) t = { ...s, then, otherwise };
    } else if (s.kind === 'loop') {
      const [init, update, inner] = [mapStmts(s.init, f), mapStmts(s.update, f), mapStmts(s.body, f)];
      if (init !== s.init || update !== s.update || inner !== s.body) t = { ...s, init, update, body: inner };
    }
    if (t !== s) changed = true;
    out.push(t);
  }
  return changed ? out : body;
}

/** `body` with `rewrite` applied to every expression, children first (unchanged nodes keep their identity). */
function mapExprs(body: readonly Stmt[], rewrite: (e: Expr) => Expr): readonly Stmt[] {
  const expr = (e: Expr): Expr => rewrite(withChildren(e, expr));
  const list = (xs: readonly Stmt[]): readonly Stmt[] => {
    const ys = xs.map(stmt);
    return ys.every((y, i) => y === xs[i]) ? xs : ys;
  };
  const stmt = (s: Stmt): Stmt => {
    const exprs = directExprs(s);
    const mapped = exprs.map(expr);
    let t = exprs.every((e, i) => e === mapped[i]) ? s : withDirectExprs(s, mapped);
    if (t.kind === 'if') {
      const [then, otherwise] = [list(t.then), list(t.otherwise)];
      if (then !== t.then || otherwise !== t.otherwise) t = { ...t, then, otherwise };
    } else if (t.kind === 'loop') {
      const [init, update, inner] = [list(t.init), list(t.update), list(t.body)];
      if (init !== t.init || update !== t.update || inner !== t.body) t = { ...t, init, update, body: inner };
    }
    return t;
  };
  return list(body);
}

/** An expression with its direct children replaced by `f`'s (itself when none changes). */
function withChildren(e: Expr, f: (e: Expr) => Expr): Expr {
  switch (e.kind) {
    case 'unary': { const arg = f(e.arg); return arg === e.arg ? e : { ...e, arg }; }
    case 'cast': { const value = f(e.value); return value === e.value ? e : { ...e, value }; }
    case 'binary': case 'compare': case 'logical': {
      const [left, right] = [f(e.left), f(e.right)];
      return left === e.left && right === e.right ? e : { ...e, left, right };
    }
    case 'select': {
      const [cond, then, otherwise] = [f(e.cond), f(e.then), f(e.otherwise)];
      return cond === e.cond && then === e.then && otherwise === e.otherwise ? e : { ...e, cond, then, otherwise };
    }
    case 'math': { const args = e.args.map(f); return args.every((a, i) => a === e.args[i]) ? e : { ...e, args }; }
    case 'index': { const indices = e.indices.map(f); return indices.every((a, i) => a === e.indices[i]) ? e : { ...e, indices }; }
    case 'call': {
      const args = e.args.map((a: Argument) => (a.kind === 'array-ref' ? a : f(a)));
      return args.every((a, i) => a === e.args[i]) ? e : { ...e, args };
    }
    default: return e;
  }
}

/** A statement with the expressions `directExprs` lists replaced, in that order. */
function withDirectExprs(s: Stmt, xs: readonly Expr[]): Stmt {
  switch (s.kind) {
    case 'let': return { ...s, init: xs[0]! };
    case 'assign': return { ...s, value: xs[0]! };
    case 'store': return { ...s, indices: xs.slice(0, -1), value: xs[xs.length - 1]! };
    case 'if': return { ...s, cond: xs[0]! };
    case 'loop': return s.cond ? { ...s, cond: xs[0]! } : s;
    case 'return': return s.value ? { ...s, value: xs[0]! } : s;
    case 'call': return { ...s, call: xs[0] as Extract<Expr, { kind: 'call' }> };
    default: return s;
  }
}

/** `body` with variables renamed (declarations, reads, assignments, arrays and array arguments). */
function renameVariables(body: readonly Stmt[], renames: ReadonlyMap<Variable, Variable>): readonly Stmt[] {
  if (renames.size === 0) return body;
  const to = (v: Variable) => renames.get(v) ?? v;
  const exprs = mapExprs(body, (e) => {
    if (e.kind === 'var' && renames.has(e.variable)) return { ...e, variable: to(e.variable) };
    if ((e.kind === 'index' || e.kind === 'dim') && renames.has(e.array)) return { ...e, array: to(e.array) };
    if (e.kind === 'call' && e.args.some((a) => a.kind === 'array-ref' && renames.has(a.array))) {
      return { ...e, args: e.args.map((a) => (a.kind === 'array-ref' ? { ...a, array: to(a.array) } : a)) };
    }
    return e;
  });
  return mapStmts(exprs, (s) => {
    switch (s.kind) {
      case 'let': case 'assign': case 'local-array': case 'draw':
        return renames.has(s.variable) ? [{ ...s, variable: to(s.variable) }] : undefined;
      case 'store':
        return renames.has(s.array) ? [{ ...s, array: to(s.array) }] : undefined;
      default:
        return undefined;
    }
  });
}

function substitute(body: readonly Stmt[], v: Variable, value: Expr): readonly Stmt[] {
  return mapExprs(body, (e) => (e.kind === 'var' && e.variable === v ? { ...value, loc: e.loc } : e));
}

function substituteExpr(e: Expr, v: Variable, value: Expr): Expr {
  const f = (x: Expr): Expr => (x.kind === 'var' && x.variable === v ? value : withChildren(x, f));
  return f(e);
}
