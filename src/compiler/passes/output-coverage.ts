/**
 * Whether a kernel writes every element of a (1-D) output row before it reads any element it has
 * not written — then a staged output needs neither its old contents read in nor written flags
 * (coalescing.ts): the tile may start from zeros and be stored back whole. This is the common
 * shape of per-row kernels:
 *
 *     out[0] = 1; out[1] = x;                                          // elements 0 and 1
 *     for (let i = 2; i < out.length; i++) out[i] = x * out[i - 1] …;  // then 2 … n−1, in order
 *     for (let i = 2; i < out.length; i++) out[i] /= …;                // all written: anything goes
 *
 * The analysis follows the kernel's top-level statements (and helpers the row is passed to) with a
 * count P of leading elements certainly written: a store to `out[P]` extends it; a loop
 * `for (let i = s; i < out.length; i++)` with s ≤ P that stores `out[i]` unconditionally, and reads
 * only `out[i − c]` (c ≥ 1), constant indices below P and `out[i]` after that store, makes it
 * everything. Reads of elements already written are served by the tile. In place (`(n)->(n)` on
 * one array), reads of the row before its first write (`row[1]` in the Hermite example) come from
 * memory: nothing has been written over them yet. Anything else gives up (the caller then tracks
 * written elements at run time).
 */
import type { Expr, HelperFunction, Stmt, TypedKernel, Variable } from '../ir.js';
import { childExprs, forEachStmt } from '../ir-walk.js';

export interface Coverage {
  /** Every element of the row is written before any read that the tile could not serve. */
  readonly writesAll: boolean;
  /** Reads (index expressions) that must come from memory: they happen before any write. */
  readonly memoryReads: ReadonlySet<Expr>;
}

class GiveUp extends Error {}

/**
 * Analyses the row that kernel parameters `params` (aliases of one array: an output, and the input
 * it updates in place) share.
 *
 * @param kernel the typed kernel
 * @param params indices of the parameters that are this row
 * @param length the row's length (its core size, known when staging)
 * @returns whether the row is written whole before being read, and which reads go to memory
 */
export function analyseCoverage(kernel: TypedKernel, params: readonly number[], length: number): Coverage {
  const memoryReads = new Set<Expr>();
  const state = { written: 0, anyWrite: false };
  const all = () => state.written >= length;
  try {
    walk(kernel.body, new Set(params.map((p) => kernel.params[p]!)), true);
    return { writesAll: all(), memoryReads };
  } catch (e) {
    if (e instanceof GiveUp) return { writesAll: false, memoryReads: new Set() };
    throw e;
  }

  /** Checks every read of the row in `e`. `loop` describes the counter loop being walked, if any. */
  function reads(e: Expr, row: ReadonlySet<Variable>, topLevel: boolean, loop?: { counter: Variable; storedCurrent: boolean }): void {
    if (e.kind === 'index' && row.has(e.array)) {
      e.indices.forEach((i) => reads(i, row, topLevel, loop));
      if (all()) return;
      const k = constantIndex(e.indices[0]!);
      if (k !== undefined && k < state.written) return;
      if (loop && isCounterMinus(e.indices[0]!, loop.counter, loop.storedCurrent ? 0 : 1)) return;
      if (topLevel && !state.anyWrite) {
        memoryReads.add(e);
        return;
      }
      throw new GiveUp();
    }
    if (e.kind === 'call' && !all() && e.args.some((a) => a.kind === 'array-ref' && row.has(a.array))) throw new GiveUp();
    childExprs(e).forEach((c) => reads(c, row, topLevel, loop));
  }

  function walk(body: readonly Stmt[], row: ReadonlySet<Variable>, topLevel: boolean): void {
    body.forEach((s, n) => {
      switch (s.kind) {
        case 'let': reads(s.init, row, topLevel); break;
        case 'assign': reads(s.value, row, topLevel); break;
        case 'store': {
          s.indices.forEach((i) => reads(i, row, topLevel));
          reads(s.value, row, topLevel);
          if (!row.has(s.array)) break;
          const k = constantIndex(s.indices[0]!);
          if (topLevel && k === state.written) state.written++;
          state.anyWrite = true;
          break;
        }
        case 'loop':
          if (all()) {
            if (mentionsRow(s, row)) state.anyWrite = true;
            break;
          }
          // A `return` inside the loop may end the row before the statements that write it.
          if (returnsWithin(s)) throw new GiveUp();
          if (!topLevel || !counterLoop(s, row)) {
            if (readsRow(s, row)) throw new GiveUp();
            if (mentionsRow(s, row)) state.anyWrite = true;
          }
          break;
        case 'if':
          reads(s.cond, row, topLevel);
          walk(s.then, row, false);
          walk(s.otherwise, row, false);
          break;
        case 'call':
          callsHelper(s.call, row, topLevel);
          break;
        case 'return':
          if (s.value) reads(s.value, row, topLevel);
          if (!(topLevel && n === body.length - 1) && !all()) throw new GiveUp();
          break;
        default:
          break;
      }
    });
  }

  /** A helper the row is passed to: its body continues the walk, with its parameter as the row. */
  function callsHelper(call: Extract<Expr, { kind: 'call' }>, row: ReadonlySet<Variable>, topLevel: boolean): void {
    const helper: HelperFunction = call.helper;
    const inner = new Set<Variable>();
    call.args.forEach((a, i) => {
      if (a.kind === 'array-ref') {
        if (row.has(a.array)) inner.add(helper.params[i]!);
      } else {
        reads(a, row, topLevel);
      }
    });
    if (inner.size === 0) return;
    if (all()) {
      state.anyWrite = true;
      return;
    }
    if (!topLevel) throw new GiveUp();
    walk(helper.body, inner, true);
  }

  /**
   * `for (let i = s; i < row.length; i++) { … row[i] = … }` with s ≤ written: walks its body and,
   * when it qualifies, marks the row written whole. Returns false when it does not qualify.
   */
  function counterLoop(s: Extract<Stmt, { kind: 'loop' }>, row: ReadonlySet<Variable>): boolean {
    const init = s.init[0];
    const update = s.update[0];
    if (!s.testFirst || s.init.length !== 1 || s.update.length !== 1 || init?.kind !== 'let' || !s.cond) return false;
    const counter = init.variable;
    const start = constantIndex(init.init);
    const cond = s.cond;
    if (start === undefined || start > state.written) return false;
    if (cond.kind !== 'compare' || cond.op !== '<' || !isVar(cond.left, counter) || !isRowLength(cond.right, row)) return false;
    if (update?.kind !== 'assign' || update.variable !== counter || update.value.kind !== 'binary' || update.value.op !== '+' || constantIndex(update.value.right) !== 1) return false;
    let jumps = false;
    forEachStmt(s.body, (t) => {
      if (t.kind === 'break' || t.kind === 'continue' || t.kind === 'return' || ((t.kind === 'assign' || t.kind === 'let') && t.variable === counter)) jumps = true;
    });
    if (jumps) return false;
    const loop = { counter, storedCurrent: false };
    for (const t of s.body) {
      if (t.kind === 'store' && row.has(t.array)) {
        t.indices.forEach((i) => reads(i, row, false, loop));
        reads(t.value, row, false, loop);
        if (isVar(t.indices[0]!, counter)) loop.storedCurrent = true;
        continue;
      }
      if (t.kind === 'let' || t.kind === 'assign') {
        reads(t.kind === 'let' ? t.init : t.value, row, false, loop);
        continue;
      }
      // Anything else in the body must leave the row alone.
      if (mentionsRow(t, row)) return false;
    }
    if (!loop.storedCurrent) return false;
    state.written = Math.max(state.written, length);
    state.anyWrite = true;
    return true;
  }
}

function returnsWithin(s: Stmt): boolean {
  let found = false;
  forEachStmt([s], (t) => {
    if (t.kind === 'return') found = true;
  });
  return found;
}

function constantIndex(e: Expr): number | undefined {
  return e.kind === 'const' && typeof e.value === 'number' && Number.isInteger(e.value) && e.value >= 0 ? e.value : undefined;
}

function isVar(e: Expr, v: Variable): boolean {
  return e.kind === 'var' && e.variable === v;
}

/** `i - c` with c ≥ `least` (`i` itself counts as c = 0). */
function isCounterMinus(e: Expr, counter: Variable, least: number): boolean {
  if (isVar(e, counter)) return least === 0;
  if (e.kind !== 'binary' || e.op !== '-' || !isVar(e.left, counter)) return false;
  const c = constantIndex(e.right);
  return c !== undefined && c >= Math.max(least, 1);
}

function isRowLength(e: Expr, row: ReadonlySet<Variable>): boolean {
  if (e.kind === 'cast') return isRowLength(e.value, row);
  return e.kind === 'dim' && e.axis === 0 && row.has(e.array);
}

/** Whether a statement reads or writes the row anywhere (helpers the row is passed to included). */
function mentionsRow(s: Stmt, row: ReadonlySet<Variable>): boolean {
  let found = false;
  forEachStmt([s], (t) => {
    if (t.kind === 'store' && row.has(t.array)) found = true;
  });
  return found || readsRow(s, row);
}

function readsRow(s: Stmt, row: ReadonlySet<Variable>): boolean {
  let found = false;
  const visit = (e: Expr): void => {
    if (e.kind === 'index' && row.has(e.array)) found = true;
    if (e.kind === 'call' && e.args.some((a) => a.kind === 'array-ref' && row.has(a.array))) found = true;
    childExprs(e).forEach(visit);
  };
  forEachStmt([s], (t) => {
    switch (t.kind) {
      case 'let': visit(t.init); break;
      case 'assign': visit(t.value); break;
      case 'store': t.indices.forEach(visit); visit(t.value); break;
      case 'if': visit(t.cond); break;
      case 'loop': if (t.cond) visit(t.cond); break;
      case 'return': if (t.value) visit(t.value); break;
      case 'call': visit(t.call); break;
      default: break;
    }
  });
  return found;
}
