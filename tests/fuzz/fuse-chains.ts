/**
 * `fuse` in the differential fuzzer: two random element-wise kernels chained, `b(a(…), …)`, fused
 * into one kernel and compared with the oracle run step by step — the first kernel's result rounded
 * to its declared dtype, as the separate calls would store it, then the second kernel over it — on
 * the cpu (JS and Wasm engines), the parallel target and the gpu (host arrays). The second
 * kernel's first parameter has the first's return dtype (the chain a user writes); its other
 * operands are fresh arrays or broadcast scalars, and the first kernel's operands are those of an
 * ordinary fuzz case (strides, reversed rows, broadcasting).
 *
 * On the cpu profile a chain may end in a fold of its row, fused too: a guvectorize `(n)->()`
 * row sum (the chain's kernels computed where it reads each element) or a trailing
 * `add.reduce` (folded inside the kernel); the oracle sums the chain's values in float64, in
 * order, from the first, as both fold kernels do.
 */
import { fuse, guvectorize, setEngineMode, vectorize } from '../../src/index.js';
import { operandsFor } from './campaign.js';
import { buffer, type Case, expected, fmt, type Operand, printOperand, printUfunc, same, ufuncOf, view } from './differential.js';
import { type Coverage, KernelGenerator, type Profile, randomValue, Rng } from './generate.js';
import type { Kernel } from './kernel-ast.js';

/** Where a fused chain runs. */
export type FuseWhere = 'fuse-js' | 'fuse-wasm' | 'fuse-parallel' | 'fuse-gpu';
export const FUSE_WHERE: Record<Profile, readonly FuseWhere[]> = { cpu: ['fuse-js', 'fuse-wasm', 'fuse-parallel'], gpu: ['fuse-gpu'] };

/** A chain: the first step's case, the second kernel, and its operands after the first. */
export interface ChainCase {
  readonly first: Case;
  readonly second: Kernel;
  readonly rest: readonly Operand[];
  /** A fold of the chain's row after it: a `(n)->()` gufunc, or a trailing `reduce`. */
  readonly tail?: 'row-sum' | 'reduce';
}

/** The fold tails in float64 on a target: a `(n)->()` row sum and an associative `add` for `reduce`. */
function tailsOn(target: 'cpu' | 'parallel') {
  const rowSum = guvectorize(['void(float64[:], float64[:])'], '(n)->()', { target })(function rowSum(x: Float64Array, out: Float64Array) {
    let s = x[0]!;
    for (let i = 1; i < x.length; i++) s += x[i]!;
    out[0] = s;
  });
  const add = vectorize(['float64(float64, float64)'], { target, associative: true, identity: 0 })(function add(a: number, b: number) {
    return a + b;
  });
  return { rowSum, add };
}

const TAILS = { cpu: tailsOn('cpu'), parallel: tailsOn('parallel') };

/** A random chain, or undefined when no second kernel taking the first's dtype came in 40 tries. */
export function randomChain(rng: Rng, profile: Profile, coverage: Coverage): ChainCase | undefined {
  const gen = new KernelGenerator(rng, profile, coverage);
  const a = gen.vectorize();
  const first = operandsFor(a, rng, profile);
  for (let tries = 0; tries < 40; tries++) {
    const b = gen.vectorize();
    if (b.params[0]!.dtype !== a.returns) continue;
    const rest = b.params.slice(1).map((p): Operand => {
      if (rng.chance(0.15)) {
        const v = randomValue(rng, p.dtype, profile);
        if (p.dtype !== 'bool' && !Object.is(v, -0)) return { dtype: p.dtype, data: [v], shape: [1], strides: [0], offset: 0, scalar: v };
      }
      return { dtype: p.dtype, data: Array.from({ length: first.rows }, () => randomValue(rng, p.dtype, profile)), shape: [first.rows], strides: [1], offset: 0 };
    });
    const foldable = profile === 'cpu' && first.rows > 0;
    const tail = foldable && rng.chance(0.4) ? (rng.chance(0.5) ? 'row-sum' : 'reduce') : undefined;
    return { first, second: b, rest, ...(tail ? { tail } : {}) };
  }
  return undefined;
}

/** The oracle's results of a chain, step by step. */
function expectedChain(c: ChainCase, gpu: boolean): number[] {
  const intermediate = expected(c.first, gpu)[0]!;
  const carried: Operand = { dtype: c.second.params[0]!.dtype, data: intermediate, shape: [c.first.rows], strides: [1], offset: 0 };
  const values = expected({ kernel: c.second, operands: [carried, ...c.rest], inPlace: false, rows: c.first.rows }, gpu)[0]!;
  if (!c.tail) return values;
  let s = Number(values[0]);
  for (let i = 1; i < values.length; i++) s += Number(values[i]);
  return [s];
}

export interface ChainOutcome {
  readonly ok: boolean;
  readonly detail?: string;
  /** Elements compared (0 where the oracle declined the case). */
  readonly pairs: number;
}

/** Runs a chain fused where it says and compares it with the oracle; errors are findings too. */
export async function runChain(c: ChainCase, where: FuseWhere): Promise<ChainOutcome> {
  const gpu = where === 'fuse-gpu';
  let want: number[];
  try {
    want = expectedChain(c, gpu);
  } catch {
    return { ok: true, pairs: 0 }; // an index the generator should not make: skipped, as in runCase
  }
  const target = gpu ? 'gpu' : where === 'fuse-parallel' ? 'parallel' : 'cpu';
  try {
    if (where === 'fuse-js') setEngineMode('js');
    if (where === 'fuse-wasm') setEngineMode('wasm');
    const a = ufuncOf(c.first.kernel, target) as unknown as (...args: unknown[]) => unknown;
    const b = ufuncOf(c.second, target) as unknown as (...args: unknown[]) => unknown;
    const n = c.first.operands.length;
    const tails = TAILS[target === 'parallel' ? 'parallel' : 'cpu'];
    const fold = (r: unknown) => (c.tail === 'row-sum' ? tails.rowSum(r as never) : c.tail === 'reduce' ? tails.add.reduce(r as never) : r);
    const chain = fuse((...xs: unknown[]) => fold(b(a(...xs.slice(0, n)), ...xs.slice(n))));
    const args = [...c.first.operands, ...c.rest].map((op) => view(op, buffer(op)));
    const r = await (chain as unknown as (...args: unknown[]) => Promise<unknown>)(...args);
    const got = typeof r === 'number' || typeof r === 'boolean' ? [Number(r)] : ArrayBuffer.isView(r) ? (r as unknown as ArrayLike<number>) : (r as { data: ArrayLike<number> }).data;
    if (got.length !== want.length) return { ok: false, pairs: want.length, detail: `length ${got.length}, expected ${want.length}` };
    for (let i = 0; i < want.length; i++) {
      if (!same(got[i]!, want[i]!)) return { ok: false, pairs: want.length, detail: `element ${i}: got ${fmt(got[i]!)}, oracle ${fmt(want[i]!)}` };
    }
    return { ok: true, pairs: want.length };
  } catch (e) {
    return { ok: false, pairs: want.length, detail: `${(e as Error).constructor?.name ?? 'Error'}: ${(e as Error).message}` };
  } finally {
    setEngineMode('auto');
  }
}

/** A standalone repro of a chain's finding. */
export function chainRepro(c: ChainCase, where: FuseWhere, outcome: ChainOutcome): string {
  const target = where === 'fuse-gpu' ? 'gpu' : where === 'fuse-parallel' ? 'parallel' : 'cpu';
  const n = c.first.operands.length;
  const xs = Array.from({ length: n }, (_, i) => `x${i}`);
  const ys = c.rest.map((_, i) => `y${i}`);
  return [
    `// ${where}${where === 'fuse-js' || where === 'fuse-wasm' ? ` (setEngineMode('${where.slice(5)}'))` : ''}: ${outcome.detail}`,
    `const a = ${printUfunc(c.first.kernel, target)};`,
    `const b = ${printUfunc(c.second, target)};`,
    ...(c.tail === 'row-sum' ? ["const rowSum = guvectorize(['void(float64[:], float64[:])'], '(n)->()', { target: '" + target + "' })((x, out) => { let s = x[0]; for (let i = 1; i < x.length; i++) s += x[i]; out[0] = s; });"] : []),
    ...(c.tail === 'reduce' ? ["const add = vectorize(['float64(float64, float64)'], { target: '" + target + "', associative: true, identity: 0 })((a, b) => a + b);"] : []),
    `const chain = fuse((${[...xs, ...ys].join(', ')}) => ${c.tail === 'row-sum' ? 'rowSum(' : c.tail === 'reduce' ? 'add.reduce(' : ''}b(a(${xs.join(', ')})${ys.map((y) => `, ${y}`).join('')})${c.tail ? ')' : ''});`,
    `console.log(await chain(${[...c.first.operands, ...c.rest].map(printOperand).join(', ')}));`,
  ].join('\n');
}

/** Tallies of a fuse campaign, per place: chains run, elements compared; and the findings. */
export interface ChainTally {
  readonly chains: Map<FuseWhere, number>;
  readonly pairs: Map<FuseWhere, number>;
  readonly findings: { readonly where: FuseWhere; readonly seed: number; readonly repro: string }[];
  readonly coverage: Coverage;
}

export const emptyChainTally = (): ChainTally => ({ chains: new Map(), pairs: new Map(), findings: [], coverage: new Map() });

/** Runs random chains from `seed` until `deadline` (ms since epoch) or `maxChains` on `wheres`. */
export async function fuseCampaign(seed: number, deadline: number, wheres: readonly FuseWhere[], tally: ChainTally, maxFindings = 20, maxChains = Infinity): Promise<void> {
  for (let n = 0; n < maxChains && Date.now() < deadline && tally.findings.length < maxFindings; n++) {
    for (const profile of ['cpu', 'gpu'] as const) {
      const targets = wheres.filter((w) => FUSE_WHERE[profile].includes(w));
      if (!targets.length || Date.now() >= deadline) continue;
      const chainSeed = (seed * 999_983 + n * 2 + (profile === 'gpu' ? 1 : 0)) >>> 0;
      const chain = randomChain(new Rng(chainSeed), profile, tally.coverage);
      if (!chain) continue;
      for (const where of targets) {
        const outcome = await runChain(chain, where);
        tally.chains.set(where, (tally.chains.get(where) ?? 0) + 1);
        tally.pairs.set(where, (tally.pairs.get(where) ?? 0) + outcome.pairs);
        if (!outcome.ok) tally.findings.push({ where, seed: chainSeed, repro: chainRepro(chain, where, outcome) });
      }
    }
  }
}

/** The tally as text. */
export function chainReport(t: ChainTally): string {
  const lines = [...t.pairs.keys()].map((w) => `  ${w.padEnd(13)} ${String(t.chains.get(w)).padStart(8)} chains, ${String(t.pairs.get(w)).padStart(10)} elements`);
  return [`fused chains:`, ...lines, `findings: ${t.findings.length}`, ...t.findings.map((f) => `--- seed ${f.seed}, ${f.where}\n${f.repro}`)].join('\n');
}
