/**
 * Visitors over the typed IR, for the analyses in passes/ (which arrays a kernel reads, which
 * doubles hold integers, which types it uses), and one rewriter for the transforms. They visit
 * every node and decide nothing.
 */
import type { Argument, Expr, HelperFunction, Stmt, TypedKernel } from './ir.js';

/** Calls `visit` on every statement of `body`, nested ones included, parents first. */
export function forEachStmt(body: readonly Stmt[], visit: (s: Stmt) => void): void {
  for (const s of body) {
    visit(s);
    if (s.kind === 'if') {
      forEachStmt(s.then, visit);
      forEachStmt(s.otherwise, visit);
    } else if (s.kind === 'loop') {
      forEachStmt(s.init, visit);
      forEachStmt(s.update, visit);
      forEachStmt(s.body, visit);
    }
  }
}

/** The expressions a statement holds directly (not those of nested statements). */
export function directExprs(s: Stmt): Expr[] {
  switch (s.kind) {
    case 'let': return [s.init];
    case 'assign': return [s.value];
    case 'store': return [...s.indices, s.value];
    case 'if': return [s.cond];
    case 'loop': return s.cond ? [s.cond] : [];
    case 'return': return s.value ? [s.value] : [];
    case 'call': return [s.call];
    default: return [];
  }
}

/** The direct sub-expressions of an expression (arguments of calls, not array references). */
export function childExprs(e: Expr): Expr[] {
  switch (e.kind) {
    case 'unary': return [e.arg];
    case 'cast': return [e.value];
    case 'binary': case 'compare': case 'logical': return [e.left, e.right];
    case 'select': return [e.cond, e.then, e.otherwise];
    case 'math': return [...e.args];
    case 'index': return [...e.indices];
    case 'call': return e.args.filter((a): a is Expr => a.kind !== 'array-ref');
    default: return [];
  }
}

/** Calls `visit` on every expression in `body` (nested statements and sub-expressions included). */
export function forEachExpr(body: readonly Stmt[], visit: (e: Expr) => void): void {
  const walk = (e: Expr): void => {
    visit(e);
    childExprs(e).forEach(walk);
  };
  forEachStmt(body, (s) => directExprs(s).forEach(walk));
}

/**
 * A kernel with `rewrite` applied to every expression, children first, in its body and its
 * helpers (calls point at the rewritten helpers). Nodes that do not change keep their identity,
 * and the very kernel comes back when nothing changes (what a transform must do, passes/index.ts).
 */
export function rewriteExprs(kernel: TypedKernel, rewrite: (e: Expr) => Expr): TypedKernel {
  const helpers = new Map<HelperFunction, HelperFunction>();
  const same = <T>(a: readonly T[], b: readonly T[]) => a.every((x, i) => x === b[i]);
  const list = <T>(xs: readonly T[], f: (x: T) => T): readonly T[] => {
    const ys = xs.map(f);
    return same(xs, ys) ? xs : ys;
  };
  const expr = (e: Expr): Expr => rewrite(children(e));
  const children = (e: Expr): Expr => {
    switch (e.kind) {
      case 'unary': { const arg = expr(e.arg); return arg === e.arg ? e : { ...e, arg }; }
      case 'cast': { const value = expr(e.value); return value === e.value ? e : { ...e, value }; }
      case 'binary': case 'compare': case 'logical': {
        const left = expr(e.left);
        const right = expr(e.right);
        return left === e.left && right === e.right ? e : { ...e, left, right };
      }
      case 'select': {
        const [cond, then, otherwise] = [expr(e.cond), expr(e.then), expr(e.otherwise)];
        return cond === e.cond && then === e.then && otherwise === e.otherwise ? e : { ...e, cond, then, otherwise };
      }
      case 'math': { const args = list(e.args, expr); return args === e.args ? e : { ...e, args }; }
      case 'index': { const indices = list(e.indices, expr); return indices === e.indices ? e : { ...e, indices }; }
      case 'call': {
        const args = list(e.args, (a: Argument) => (a.kind === 'array-ref' ? a : expr(a)));
        const helper = helpers.get(e.helper) ?? e.helper;
        return args === e.args && helper === e.helper ? e : { ...e, args, helper };
      }
      default: return e;
    }
  };
  const stmt = (s: Stmt): Stmt => {
    switch (s.kind) {
      case 'let': { const init = expr(s.init); return init === s.init ? s : { ...s, init }; }
      case 'assign': { const value = expr(s.value); return value === s.value ? s : { ...s, value }; }
      case 'store': {
        const indices = list(s.indices, expr);
        const value = expr(s.value);
        return indices === s.indices && value === s.value ? s : { ...s, indices, value };
      }
      case 'if': {
        const [cond, then, otherwise] = [expr(s.cond), stmts(s.then), stmts(s.otherwise)];
        return cond === s.cond && then === s.then && otherwise === s.otherwise ? s : { ...s, cond, then, otherwise };
      }
      case 'loop': {
        const [init, cond, update, body] = [stmts(s.init), s.cond && expr(s.cond), stmts(s.update), stmts(s.body)];
        return init === s.init && cond === s.cond && update === s.update && body === s.body ? s : { ...s, init, cond, update, body };
      }
      case 'return': { const value = s.value && expr(s.value); return value === s.value ? s : { ...s, value }; }
      case 'call': {
        const call = expr(s.call) as Extract<Expr, { kind: 'call' }>;
        return call === s.call ? s : { ...s, call };
      }
      default: return s;
    }
  };
  const stmts = (xs: readonly Stmt[]) => list(xs, stmt);
  // Helpers come callees first, so a call is rewritten after the helper it calls.
  for (const h of kernel.helpers) {
    const body = stmts(h.body);
    helpers.set(h, body === h.body ? h : { ...h, body });
  }
  const body = stmts(kernel.body);
  if (body === kernel.body && kernel.helpers.every((h) => helpers.get(h) === h)) return kernel;
  return { ...kernel, body, helpers: kernel.helpers.map((h) => helpers.get(h)!) };
}
