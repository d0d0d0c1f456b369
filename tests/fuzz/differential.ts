/**
 * One fuzz case — a kernel and its operands — run on a target and compared with the oracle, bit
 * for bit (NaN equal to NaN, −0 unequal to +0); the shrinker; and the repro a finding prints.
 */
import { guvectorize, setEngineMode, toDevice, vectorize, type DeviceArray } from '../../src/index.js';
import type { DT, Expr, Kernel, Stmt } from './kernel-ast.js';
import { Oracle, type Slice } from './oracle.js';
import { printHelper, printKernel, signatureOf } from './print.js';
import { arrayOf, convert } from './types.js';

/** Where a case runs: the cpu target on each engine, the parallel target, the gpu (host or device arrays). */
export type Where = 'js' | 'wasm' | 'parallel' | 'gpu' | 'gpu-device';

/** A strided view of an operand: `shape`, element `strides` and `offset` into `data`. */
export interface Operand {
  readonly dtype: DT;
  readonly data: number[];
  readonly shape: number[];
  readonly strides: number[];
  readonly offset: number;
  /** For a scalar operand broadcast to every element (vectorize): a JS number. */
  readonly scalar?: number;
}

export interface Case {
  readonly kernel: Kernel;
  /** Inputs, then (guvectorize) the given output, prefilled. */
  readonly operands: readonly Operand[];
  /** The output is the first input (in place, guvectorize `(n)->(n)` of one dtype). */
  readonly inPlace: boolean;
  /** Loop shape (vectorize: the broadcast shape; guvectorize: rows). */
  readonly rows: number;
}

export interface Outcome {
  readonly ok: boolean;
  /** What differed, or the error thrown. */
  readonly detail?: string;
  /** Element (vectorize) or row (guvectorize) evaluations compared. */
  readonly pairs: number;
}

export const same = (a: number, b: number) => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

/** The typed-array buffer an operand's view lives in (bool as Uint8Array). */
export function buffer(op: Operand): ArrayLike<number> & { [i: number]: number } {
  const a = new (arrayOf(op.dtype))(op.data.length) as unknown as number[];
  op.data.forEach((v, i) => (a[i] = v));
  return a;
}

/** The expected contents of every buffer after the call, by the oracle (rows in C order). */
export function expected(c: Case, gpu: boolean): number[][] {
  const oracle = new Oracle(c.kernel, gpu);
  const stores = c.operands.map((op) => [...op.data]);
  if (c.inPlace) stores[stores.length - 1] = stores[0]!;
  const k = c.kernel;
  if (k.kind === 'vectorize') {
    const result: number[] = [];
    for (let r = 0; r < c.rows; r++) {
      const scalars = new Map<string, number>();
      k.params.forEach((p, i) => {
        const op = c.operands[i]!;
        scalars.set(p.name, op.scalar ?? stores[i]![op.offset + (op.shape[0] === 1 ? 0 : r * op.strides[0]!)]!);
      });
      result.push(oracle.run(scalars, new Map())!);
    }
    return [result];
  }
  for (let r = 0; r < c.rows; r++) {
    const scalars = new Map<string, number>();
    const slices = new Map<string, Slice>();
    k.params.forEach((p, i) => {
      const op = c.operands[i]!;
      const store = stores[i]!;
      const base = op.offset + r * op.strides[0]!;
      if (p.shape === 'scalar') {
        scalars.set(p.name, store[base]!);
        return;
      }
      const dims = op.shape.slice(1);
      const st = op.strides.slice(1);
      slices.set(p.name, {
        dtype: p.dtype,
        shape: dims,
        get: (a, b) => store[base + a * st[0]! + (b ?? 0) * (st[1] ?? 0)]!,
        set: (v, a, b) => { store[base + a * st[0]! + (b ?? 0) * (st[1] ?? 0)] = convert(v, p.dtype); },
      });
    });
    oracle.run(scalars, slices);
  }
  return [stores[stores.length - 1]!];
}

/** The ufunc of a case on a target. */
export function ufuncOf(k: Kernel, target: 'cpu' | 'parallel' | 'gpu') {
  const env = Object.fromEntries(k.helpers.map((h) => [h.name, printHelper(h)]));
  const options = { target, env } as const;
  return k.kind === 'vectorize' ? vectorize([signatureOf(k)], options)(printKernel(k)) : guvectorize([signatureOf(k)], k.layout!, options)(printKernel(k));
}

export function view(op: Operand, data: unknown): unknown {
  if (op.scalar !== undefined) return op.scalar;
  return { data, shape: op.shape, strides: op.strides, offset: op.offset, ...(op.dtype === 'bool' ? { dtype: 'bool' } : {}) };
}

/** Runs a case where it says, compares with the oracle; errors are findings too. */
export async function runCase(c: Case, where: Where): Promise<Outcome> {
  const gpu = where === 'gpu' || where === 'gpu-device';
  const target = gpu ? 'gpu' : where === 'parallel' ? 'parallel' : 'cpu';
  const pairs = c.rows;
  let want: number[][];
  try {
    want = expected(c, gpu);
  } catch (e) {
    return { ok: true, pairs: 0, detail: `oracle: ${(e as Error).message}` }; // an index the generator should not make: skipped
  }
  try {
    if (where === 'js' || where === 'wasm') setEngineMode(where);
    const f = ufuncOf(c.kernel, target) as unknown as (...a: unknown[]) => Promise<unknown>;
    const buffers = c.operands.map(buffer);
    if (c.inPlace) buffers[buffers.length - 1] = buffers[0]!;
    let got: ArrayLike<number>;
    if (c.kernel.kind === 'vectorize') {
      const args = c.operands.map((op, i) => view(op, buffers[i]));
      const r = await f(...args);
      got = typeof r === 'number' || typeof r === 'boolean' ? [Number(r)] : ArrayBuffer.isView(r) ? (r as unknown as ArrayLike<number>) : (r as { data: ArrayLike<number> }).data;
    } else if (where === 'gpu-device') {
      const devices: DeviceArray[] = [];
      const args: unknown[] = [];
      for (const [i, op] of c.operands.entries()) {
        if (c.inPlace && i === c.operands.length - 1) {
          args.push(args[0]);
          continue;
        }
        const d = await toDevice(buffers[i] as never);
        devices.push(d);
        args.push(d.view(op.shape, op.strides, op.offset));
      }
      const out = args.pop();
      await f(...args, { out });
      const last = c.inPlace ? devices[0]! : devices[devices.length - 1]!;
      got = (await last.toHost()) as unknown as ArrayLike<number>;
      devices.forEach((d) => d.destroy());
    } else {
      const args = c.operands.map((op, i) => view(op, buffers[i]));
      const out = args.pop();
      await f(...args, { out });
      got = buffers[buffers.length - 1]!;
    }
    const expect = want[0]!;
    if (got.length !== expect.length) return { ok: false, pairs, detail: `length ${got.length}, expected ${expect.length}` };
    for (let i = 0; i < expect.length; i++) {
      if (!same(got[i]!, expect[i]!)) return { ok: false, pairs, detail: `element ${i}: got ${fmt(got[i]!)}, oracle ${fmt(expect[i]!)}` };
    }
    return { ok: true, pairs };
  } catch (e) {
    return { ok: false, pairs, detail: `${(e as Error).constructor?.name ?? 'Error'}: ${(e as Error).message}` };
  } finally {
    setEngineMode('auto');
  }
}

export const fmt = (v: number) => (Object.is(v, -0) ? '-0' : String(v));

// ------------------------------------------------------------------ shrinking

/** Smaller versions of a case: fewer rows, fewer statements, subexpressions in place of expressions. */
function* smaller(c: Case): Generator<Case> {
  if (c.rows > 1) {
    for (let r = 0; r < c.rows; r++) {
      // one row (element) at a time
      const operands = c.operands.map((op) => (op.scalar !== undefined || op.shape[0] === 1 && c.kernel.kind === 'vectorize' ? op : { ...op, shape: [1, ...op.shape.slice(1)], offset: op.offset + r * op.strides[0]! }));
      yield { ...c, operands, rows: 1 };
    }
  }
  const bodies = shrinkStmts(c.kernel.body);
  for (const body of bodies) yield { ...c, kernel: { ...c.kernel, body } };
}

function* shrinkStmts(body: readonly Stmt[]): Generator<Stmt[]> {
  for (let i = 0; i < body.length; i++) {
    const s = body[i]!;
    // Statements a later one may need (declarations, the row's store, the final return) stay.
    if (s.k !== 'let' && s.k !== 'localArray' && !(s.k === 'return' && i === body.length - 1) && !(s.k === 'for' && s.body.some((t) => t.k === 'store' && t.arr === 'out'))) {
      yield [...body.slice(0, i), ...body.slice(i + 1)];
    }
    for (const smaller of shrinkStmt(s)) yield [...body.slice(0, i), smaller, ...body.slice(i + 1)];
  }
}

function* shrinkStmt(s: Stmt): Generator<Stmt> {
  switch (s.k) {
    case 'if':
      for (const then of shrinkStmts(s.then)) yield { ...s, then };
      for (const otherwise of shrinkStmts(s.otherwise)) yield { ...s, otherwise };
      for (const c of shrinkExpr(s.c)) yield { ...s, c };
      break;
    case 'for': case 'while':
      for (const body of shrinkStmts(s.body)) yield { ...s, body };
      break;
    case 'let': for (const init of shrinkExpr(s.init)) yield { ...s, init }; break;
    case 'assign': for (const value of shrinkExpr(s.value)) yield { ...s, value }; break;
    case 'store': for (const value of shrinkExpr(s.value)) yield { ...s, value }; break;
    case 'return': if (s.value) for (const value of shrinkExpr(s.value)) yield { ...s, value }; break;
    default: break;
  }
}

/** Children of the same type in place of an expression, then smaller children. */
function* shrinkExpr(e: Expr): Generator<Expr> {
  const children: Expr[] =
    e.k === 'bin' || e.k === 'cmp' || e.k === 'logic' ? [e.a, e.b]
      : e.k === 'tern' ? [e.a, e.b]
        : e.k === 'neg' || e.k === 'not' || e.k === 'bitnot' ? [e.a]
          : e.k === 'math' ? [...e.args]
            : e.k === 'call' ? [...e.args] : [];
  // (Never a literal alone: it would stand for a weak literal, typed by its context.)
  for (const c of children) if (c.t === e.t && c.k !== 'lit') yield c;
  switch (e.k) {
    case 'bin': case 'cmp': case 'logic':
      for (const a of shrinkExpr(e.a)) yield { ...e, a } as Expr;
      for (const b of shrinkExpr(e.b)) yield { ...e, b } as Expr;
      break;
    case 'tern':
      for (const a of shrinkExpr(e.a)) yield { ...e, a };
      for (const b of shrinkExpr(e.b)) yield { ...e, b };
      for (const c of shrinkExpr(e.c)) yield { ...e, c };
      break;
    case 'neg': case 'not': case 'bitnot':
      for (const a of shrinkExpr(e.a)) yield { ...e, a } as Expr;
      break;
    default: break;
  }
}

/** The smallest case found (greedy, at most `budget` runs) that still fails where `c` failed. */
export async function shrink(c: Case, where: Where, budget = 300): Promise<{ c: Case; outcome: Outcome }> {
  let best = c;
  let outcome = await runCase(c, where);
  let runs = 0;
  let progress = true;
  while (progress && runs < budget) {
    progress = false;
    for (const candidate of smaller(best)) {
      if (++runs > budget) break;
      const o = await runCase(candidate, where);
      if (!o.ok && sameKind(o, outcome)) {
        best = candidate;
        outcome = o;
        progress = true;
        break;
      }
    }
  }
  return { c: best, outcome };
}

/** Two failures alike enough for shrinking: both wrong values, or the same error class. */
function sameKind(a: Outcome, b: Outcome): boolean {
  const kind = (o: Outcome) => (o.detail?.startsWith('element') || o.detail?.startsWith('length') ? 'value' : o.detail?.split(':')[0]);
  return kind(a) === kind(b);
}

/** A standalone program that shows the finding with the public API. */
export function repro(c: Case, where: Where, outcome: Outcome): string {
  const k = c.kernel;
  const target = where === 'gpu' || where === 'gpu-device' ? 'gpu' : where === 'parallel' ? 'parallel' : 'cpu';
  const arrays = c.operands.map(printOperand);
  const call = k.kind === 'vectorize' ? `await f(${arrays.join(', ')})` : `await f(${arrays.slice(0, -1).join(', ')}, { out: ${c.inPlace ? 'ARG0 (in place)' : arrays[arrays.length - 1]} })`;
  return [
    `// ${where}${where === 'js' || where === 'wasm' ? ` (setEngineMode('${where}'))` : ''}: ${outcome.detail}`,
    `const f = ${printUfunc(k, target)};`,
    `console.log(${call});`,
  ].join('\n');
}

/** The source text that makes a kernel's ufunc on a target, for a repro. */
export function printUfunc(k: Kernel, target: 'cpu' | 'parallel' | 'gpu'): string {
  const env = k.helpers.length ? `, env: { ${k.helpers.map((h) => `${h.name}: ${JSON.stringify(printHelper(h))}`).join(', ')} }` : '';
  const make = k.kind === 'vectorize' ? `vectorize([${JSON.stringify(signatureOf(k))}], { target: '${target}'${env} })` : `guvectorize([${JSON.stringify(signatureOf(k))}], ${JSON.stringify(k.layout)}, { target: '${target}'${env} })`;
  return `${make}(\`${printKernel(k)}\`)`;
}

/** An operand as source text: its scalar, or an ndarray-like over a typed array of its data. */
export function printOperand(op: Operand): string {
  if (op.scalar !== undefined) return String(op.scalar);
  return `{ data: ${arrayOf(op.dtype).name}.from(${JSON.stringify(op.data.map(fmt)).replace(/"/g, '')}), shape: ${JSON.stringify(op.shape)}, strides: ${JSON.stringify(op.strides)}, offset: ${op.offset}${op.dtype === 'bool' ? ", dtype: 'bool'" : ''} }`;
}
