/**
 * Pass: constant propagation and folding, on the typed IR, for every backend.
 *
 * A local given a value known when the kernel is compiled at its declaration, and never assigned
 * again — `const k = 2 * PI` with `PI` in `env`, `let half = 0.5` — is replaced by that value
 * wherever it is read, and its declaration dropped. Operations on constants are folded as the
 * cpu computes them, by the constant folder (constant-folding.ts, which lowering and the gpu's
 * emitter use too, and which leaves `Math.*` and 64-bit integers to run time). Core sizes (`a.length`) are not folded here: a kernel is compiled once for all
 * sizes unless its typing needs them; `const n = a.length` still sizes a local array, because the
 * lowering (lower.ts) evaluates local array lengths, const locals included, when it types them.
 */
import type { Argument, Expr, HelperFunction, Stmt, TypedKernel, Variable } from '../ir.js';
import { constantValue, convertConstant } from '../constant-folding.js';

type Const = Extract<Expr, { kind: 'const' }>;

/**
 * Propagates and folds constants in a kernel and its helpers.
 *
 * @param kernel - the typed kernel
 * @returns the same kernel where nothing changes, else a new one
 * @example
 * // `const k = 2; return x * k` becomes `return x * 2`
 * propagateConstants(kernel);
 */
export function propagateConstants(kernel: TypedKernel): TypedKernel {
  const helpers = new Map<HelperFunction, HelperFunction>();
  for (const h of kernel.helpers) {
    const folded = new Folder(h.body, helpers);
    const body = folded.stmts(h.body);
    helpers.set(h, body === h.body ? h : { ...h, body, locals: h.locals.filter((v) => !folded.known.has(v)) });
  }
  const folder = new Folder(kernel.body, helpers);
  const body = folder.stmts(kernel.body);
  const changedHelpers = kernel.helpers.some((h) => helpers.get(h) !== h);
  if (body === kernel.body && !changedHelpers) return kernel;
  // Calls inside the kernel and helpers point at the rewritten helpers (Folder does that), so the
  // list is rebuilt in the same order.
  return { ...kernel, body, locals: kernel.locals.filter((v) => !folder.known.has(v)), helpers: kernel.helpers.map((h) => helpers.get(h)!) };
}

/** Variables assigned anywhere after their declaration (these are never propagated). */
function assignedVariables(body: readonly Stmt[], into = new Set<Variable>()): Set<Variable> {
  for (const s of body) {
    if (s.kind === 'assign') into.add(s.variable);
    else if (s.kind === 'if') {
      assignedVariables(s.then, into);
      assignedVariables(s.otherwise, into);
    } else if (s.kind === 'loop') {
      assignedVariables(s.init, into);
      assignedVariables(s.update, into);
      assignedVariables(s.body, into);
    }
  }
  return into;
}

class Folder {
  /** Propagated variables and their values. */
  readonly known = new Map<Variable, Const>();
  private readonly assigned: Set<Variable>;

  constructor(body: readonly Stmt[], private readonly helpers: ReadonlyMap<HelperFunction, HelperFunction>) {
    this.assigned = assignedVariables(body);
  }

  stmts(list: readonly Stmt[]): readonly Stmt[] {
    let changed = false;
    const out: Stmt[] = [];
    for (const s of list) {
      const t = this.stmt(s);
      if (t !== s) changed = true;
      if (t) out.push(t);
    }
    return changed ? out : list;
  }

  /** The statement with constants folded, or undefined where it is a propagated declaration. */
  private stmt(s: Stmt): Stmt | undefined {
    switch (s.kind) {
      case 'let': {
        const init = this.expr(s.init);
        if (init.kind === 'const' && !this.assigned.has(s.variable)) {
          this.known.set(s.variable, init);
          return undefined;
        }
        return init === s.init ? s : { ...s, init };
      }
      case 'assign': {
        const value = this.expr(s.value);
        return value === s.value ? s : { ...s, value };
      }
      case 'store': {
        const indices = this.exprs(s.indices);
        const value = this.expr(s.value);
        return indices === s.indices && value === s.value ? s : { ...s, indices, value };
      }
      case 'if': {
        const cond = this.expr(s.cond);
        const then = this.stmts(s.then);
        const otherwise = this.stmts(s.otherwise);
        return cond === s.cond && then === s.then && otherwise === s.otherwise ? s : { ...s, cond, then, otherwise };
      }
      case 'loop': {
        const init = this.stmts(s.init);
        const cond = s.cond && this.expr(s.cond);
        const update = this.stmts(s.update);
        const body = this.stmts(s.body);
        return init === s.init && cond === s.cond && update === s.update && body === s.body ? s : { ...s, init, cond, update, body };
      }
      case 'return': {
        const value = s.value && this.expr(s.value);
        return value === s.value ? s : { ...s, value };
      }
      case 'call': {
        const call = this.expr(s.call) as Extract<Expr, { kind: 'call' }>;
        return call === s.call ? s : { ...s, call };
      }
      case 'local-array': case 'draw': case 'break': case 'continue':
        return s;
    }
  }

  private exprs(list: readonly Expr[]): readonly Expr[] {
    const out = list.map((e) => this.expr(e));
    return out.every((e, i) => e === list[i]) ? list : out;
  }

  private args(list: readonly Argument[]): readonly Argument[] {
    const out = list.map((a) => (a.kind === 'array-ref' ? a : this.expr(a)));
    return out.every((a, i) => a === list[i]) ? list : out;
  }

  expr(e: Expr): Expr {
    switch (e.kind) {
      case 'const': case 'dim':
        return e;
      case 'var': {
        const value = this.known.get(e.variable);
        return value ? { ...value, loc: e.loc } : e;
      }
      case 'unary': {
        const arg = this.expr(e.arg);
        return folded(arg === e.arg ? e : { ...e, arg });
      }
      case 'binary': {
        const left = this.expr(e.left);
        const right = this.expr(e.right);
        return folded(left === e.left && right === e.right ? e : { ...e, left, right });
      }
      case 'compare': case 'logical': {
        const left = this.expr(e.left);
        const right = this.expr(e.right);
        return left === e.left && right === e.right ? e : { ...e, left, right };
      }
      case 'select': {
        const cond = this.expr(e.cond);
        const then = this.expr(e.then);
        const otherwise = this.expr(e.otherwise);
        return cond === e.cond && then === e.then && otherwise === e.otherwise ? e : { ...e, cond, then, otherwise };
      }
      case 'cast': {
        const value = this.expr(e.value);
        if (value.kind === 'const') return { kind: 'const', value: convertConstant(value.value, e.type), type: e.type, loc: e.loc };
        return value === e.value ? e : { ...e, value };
      }
      case 'math': {
        const args = this.exprs(e.args);
        return args === e.args ? e : { ...e, args };
      }
      case 'call': {
        const args = this.args(e.args);
        const helper = this.helpers.get(e.helper) ?? e.helper;
        return args === e.args && helper === e.helper ? e : { ...e, args, helper };
      }
      case 'index': {
        const indices = this.exprs(e.indices);
        return indices === e.indices ? e : { ...e, indices };
      }
    }
  }
}

/** An operation on constants as the constant it computes (constant-folding.ts), else itself. */
function folded(e: Expr): Expr {
  const value = constantValue(e);
  return value === undefined ? e : { kind: 'const', value, type: e.type, loc: e.loc };
}
