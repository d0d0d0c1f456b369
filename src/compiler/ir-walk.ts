/**
 * Visitors over the typed IR, for the analyses in passes/ (which arrays a kernel reads, which
 * doubles hold integers, which types it uses). They visit every node and decide nothing.
 */
import type { Expr, Stmt } from './ir.js';

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
