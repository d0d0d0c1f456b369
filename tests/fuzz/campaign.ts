/**
 * A fuzzing campaign: from a seed, random kernels and operands run on every target and engine and
 * compared with the oracle; failures are shrunk to a repro. The CI test runs one at a fixed seed
 * (tests/fuzz/fuzz.test.ts); `npm run fuzz -- --minutes N` runs a long one (tests/fuzz/cli.ts).
 */
import { setParallelOptions } from '../../src/index.js';
import { type Coverage, KernelGenerator, type Profile, randomValue, Rng } from './generate.js';
import type { DT, Kernel } from './kernel-ast.js';
import { type Case, type Operand, repro, runCase, shrink, type Where } from './differential.js';

export interface Finding {
  readonly where: Where;
  readonly seed: number;
  readonly detail: string;
  readonly repro: string;
}

export interface Tally {
  /** Kernels run, per target. */
  readonly kernels: Map<Where, number>;
  /** Kernel × input pairs (elements or rows) compared, per target. */
  readonly pairs: Map<Where, number>;
  readonly findings: Finding[];
  readonly coverage: Coverage;
}

export function emptyTally(): Tally {
  return { kernels: new Map(), pairs: new Map(), findings: [], coverage: new Map() };
}

/** Operands for a kernel: random values, reversed or spaced strides, a broadcast scalar or row, in place. */
export function operandsFor(k: Kernel, rng: Rng, profile: Profile, maxRows = 300): Case {
  // The gpu compiles a shader per kernel (tenths of a second on lavapipe): many rows per kernel there.
  const rows = 1 + rng.int(profile === 'gpu' ? (rng.chance(0.5) ? 4096 : 64) : rng.chance(0.2) ? maxRows : 24);
  const n = 1 + rng.int(6);
  const m = 1 + rng.int(4);
  const make = (dtype: DT, core: number[], broadcastable: boolean): Operand => {
    if (broadcastable && rng.chance(0.15)) {
      // a scalar (a JS number the loop's dtype holds exactly) or a one-element row, broadcast
      const v = randomValue(rng, dtype, profile);
      if (rng.chance(0.5) && dtype !== 'bool' && !Object.is(v, -0)) return { dtype, data: [v], shape: [1], strides: [0], offset: 0, scalar: v };
      return { dtype, data: [v], shape: [1, ...core], strides: [0, ...core.map(() => 1)], offset: 0 };
    }
    const shape = [rows, ...core];
    const inner = core.reduce((a, b) => a * b, 1);
    const layout = rng.int(4); // 0: C order, 1: rows reversed, 2: spaced rows, 3: reversed core
    const spacing = layout === 2 ? 1 + rng.int(3) : 1;
    const rowStride = inner * spacing;
    const size = rows * rowStride;
    const data = Array.from({ length: size }, () => randomValue(rng, dtype, profile));
    const coreStrides = core.length === 2 ? [core[1]!, 1] : core.map(() => 1);
    if (layout === 3 && core.length === 1) return { dtype, data, shape, strides: [rowStride, -1], offset: core[0]! - 1 };
    if (layout === 1) return { dtype, data, shape, strides: [-rowStride, ...coreStrides], offset: (rows - 1) * rowStride };
    return { dtype, data, shape, strides: [rowStride, ...coreStrides], offset: 0 };
  };
  if (k.kind === 'vectorize') {
    const operands = k.params.map((p, i) => make(p.dtype, [], i > 0 || k.params.length === 1 ? i > 0 : true));
    // at least one operand spans the rows
    if (operands.every((o) => o.shape[0] === 1 || o.scalar !== undefined)) operands[0] = make(k.params[0]!.dtype, [], false);
    return { kernel: k, operands, inPlace: false, rows };
  }
  const [x, ...rest] = k.params;
  const coreOf = (layoutPart: string) => (layoutPart === 'matrix' ? [m, n] : layoutPart === 'row' ? [n] : []);
  const xs = make(x!.dtype, coreOf(x!.shape), false);
  const others = rest.slice(0, -1).map((p) => make(p.dtype, coreOf(p.shape), false));
  const outCore = k.layout === '(m,n)->(m)' ? [m] : [n];
  const out = make(k.params[k.params.length - 1]!.dtype, outCore, false);
  // prefilled with a sentinel, so rows a kernel leaves unwritten compare too
  const filled: Operand = { ...out, data: out.data.map((_, i) => (i % 3 === 0 ? 7 : 0)) };
  const inPlace = k.layout === '(n)->(n)' && x!.dtype === k.params[k.params.length - 1]!.dtype && rng.chance(0.2);
  return { kernel: k, operands: [xs, ...others, inPlace ? xs : filled], inPlace, rows };
}

/** Where each profile runs. */
export const WHERE: Record<Profile, readonly Where[]> = { cpu: ['js', 'wasm', 'parallel'], gpu: ['gpu', 'gpu-device'] };

/**
 * Runs kernels from `seed` until `deadline` (ms since epoch) on `wheres`; findings are shrunk and
 * recorded (at most `maxFindings`).
 */
export async function campaign(seed: number, deadline: number, wheres: readonly Where[], tally: Tally, maxFindings = 20, maxKernels = Infinity, maxRows = 300): Promise<void> {
  setParallelOptions({ threshold: 0 });
  const cpu = wheres.filter((w) => WHERE.cpu.includes(w));
  const gpu = wheres.filter((w) => WHERE.gpu.includes(w));
  for (let n = 0; n < maxKernels && Date.now() < deadline && tally.findings.length < maxFindings; n++) {
    for (const [profile, targets] of [['cpu', cpu], ['gpu', gpu]] as const) {
      if (!targets.length || Date.now() >= deadline) continue;
      const caseSeed = (seed * 1_000_003 + n * 2 + (profile === 'gpu' ? 1 : 0)) >>> 0;
      const rng = new Rng(caseSeed);
      const gen = new KernelGenerator(rng, profile, tally.coverage);
      const kernel = rng.chance(0.5) ? gen.vectorize() : gen.guvectorize();
      const c = operandsFor(kernel, rng, profile, maxRows);
      for (const where of targets) {
        const outcome = await runCase(c, where);
        tally.kernels.set(where, (tally.kernels.get(where) ?? 0) + 1);
        tally.pairs.set(where, (tally.pairs.get(where) ?? 0) + outcome.pairs);
        if (!outcome.ok) {
          const small = await shrink(c, where);
          tally.findings.push({ where, seed: caseSeed, detail: small.outcome.detail ?? '', repro: repro(small.c, where, small.outcome) });
        }
      }
    }
  }
}

/** The tally as text: pairs and kernels per target, findings, and the constructs generated. */
export function report(t: Tally): string {
  const lines = [...t.pairs.keys()].map((w) => `  ${w.padEnd(10)} ${String(t.kernels.get(w)).padStart(8)} kernels, ${String(t.pairs.get(w)).padStart(10)} kernel × input pairs`);
  const coverage = [...t.coverage.entries()].sort((a, b) => a[0].localeCompare(b[0])).map(([k, v]) => `${k} ${v}`).join(', ');
  return [`targets:`, ...lines, `findings: ${t.findings.length}`, ...t.findings.map((f) => `--- seed ${f.seed}, ${f.where}\n${f.repro}`), `coverage: ${coverage}`].join('\n');
}
