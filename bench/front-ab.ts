/**
 * A/B of the call path (issue 21: one front), in one process: the library of this checkout
 * against the library of another checkout (`--base DIR`, e.g. a `git worktree` of the commit
 * before), measured in alternating rounds so that the machine's noise falls on both alike.
 *
 *   git worktree add --detach /tmp/ufunc-base <commit> && ln -s $PWD/node_modules /tmp/ufunc-base/
 *   npx tsx bench/front-ab.ts --base /tmp/ufunc-base [--rounds 7] [--calls 1000] [--no-gpu]
 *   npx tsx bench/front-ab.ts --base /tmp/ufunc-base --processes 6   # one library per process
 *
 * In one process the two libraries disturb each other (which one loaded second, and the GPU
 * device each makes, moved the ratios by 15–30 % on the 2-core VM); `--processes N` runs N
 * processes per side instead, alternating sides, each timing one library (`--lib DIR --json`).
 *
 * Measures what users wait for: a 1-element cpu call (awaited and `.sync`, output given), and a
 * chain of small gpu calls on device arrays (SAXPY 4,096 float32 into `out`, ended by one
 * `toHost()`), per call. Prints each side's median per round and the ratio new ÷ base.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { formatSeconds } from './lib/format.js';
import { markdownTable } from './lib/markdown.js';
import { median, timeCalls } from './lib/timing.js';

const argv = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const baseDir = flag('--base');
const libDir = flag('--lib');
const processes = Number(flag('--processes') ?? 0);
if (!baseDir && !libDir) throw new Error('usage: npx tsx bench/front-ab.ts --base DIR [--rounds N] [--calls N] [--no-gpu] [--processes N]');
const ROUNDS = Number(flag('--rounds') ?? 7);
const CHAIN_CALLS = Number(flag('--calls') ?? 1000);
const withGpu = !argv.includes('--no-gpu');

// The library's entry, loosely typed: the two checkouts' types need not agree.
interface Library {
  vectorize(sigs: string[], options?: object): (kernel: Function) => ((...args: unknown[]) => Promise<unknown>) & { sync(...args: unknown[]): unknown };
  toDevice(data: Float32Array): Promise<{ toHost(): Promise<unknown> }>;
  availableTargets(): Promise<string[]>;
  shutdown(): Promise<void>;
}

async function load(dir: string): Promise<Library> {
  return (await import(pathToFileURL(resolve(dir, 'src/index.ts')).href)) as Library;
}

interface Case {
  readonly name: string;
  /** Prepares the case on one library; returns its timed call and settle. */
  prepare(lib: Library): Promise<{ call: () => unknown; settle?: () => Promise<unknown>; callsPerRun: number }>;
}

const saxpyKernel = (a: number, x: number, y: number) => a * x + y;

const CASES: Case[] = [
  {
    name: '1-element cpu call, `await f(2, x, y, { out })`',
    async prepare(lib) {
      const f = lib.vectorize(['float32(float32, float32, float32)'], { target: 'cpu' })(saxpyKernel);
      const [x, y, z] = [Float32Array.of(1), Float32Array.of(2), new Float32Array(1)];
      return { call: () => f(2, x, y, { out: z }), callsPerRun: 1 };
    },
  },
  {
    name: '1-element cpu call, `f.sync(2, x, y, { out })`',
    async prepare(lib) {
      const f = lib.vectorize(['float32(float32, float32, float32)'], { target: 'cpu' })(saxpyKernel);
      const [x, y, z] = [Float32Array.of(1), Float32Array.of(2), new Float32Array(1)];
      return { call: () => f.sync(2, x, y, { out: z }), callsPerRun: 1 };
    },
  },
  {
    name: `gpu chain: SAXPY 4,096 float32 into \`out\` × ${CHAIN_CALLS}, then toHost()`,
    async prepare(lib) {
      const f = lib.vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })(saxpyKernel);
      const n = 4096;
      const x = await lib.toDevice(Float32Array.from({ length: n }, (_, i) => i));
      const y = await lib.toDevice(Float32Array.from({ length: n }, (_, i) => 1 - i));
      const out = await lib.toDevice(new Float32Array(n));
      const chain = async () => {
        for (let k = 0; k < CHAIN_CALLS; k++) void f(2, x, y, { out });
        await out.toHost();
      };
      return { call: chain, callsPerRun: CHAIN_CALLS };
    },
  },
];

/** One library alone: each case's median per call, as JSON (the `--processes` children). */
async function measureAlone(dir: string): Promise<void> {
  const lib = await load(dir);
  const gpu = withGpu && (await lib.availableTargets()).includes('gpu');
  const out: Record<string, number | null> = {};
  for (const c of CASES) {
    if (c.name.startsWith('gpu') && !gpu) {
      out[c.name] = null;
      continue;
    }
    const p = await c.prepare(lib);
    const perCall: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const t = await timeCalls(p.call, { warmup: p.callsPerRun > 1 ? 2 : 2000, samples: 5, minSampleSeconds: p.callsPerRun > 1 ? 0.05 : 0.02 });
      perCall.push(t.medianSeconds / p.callsPerRun);
    }
    out[c.name] = median(perCall);
  }
  console.log(JSON.stringify(out));
  await lib.shutdown();
}

if (libDir) {
  await measureAlone(libDir);
  process.exit(0);
}

if (processes > 0) {
  const { execFileSync } = await import('node:child_process');
  const script = new URL(import.meta.url).pathname;
  const runs: Record<'base' | 'new', Record<string, number | null>[]> = { base: [], new: [] };
  for (let k = 0; k < processes; k++) {
    for (const side of k % 2 === 0 ? (['base', 'new'] as const) : (['new', 'base'] as const)) {
      const dir = side === 'base' ? resolve(baseDir!) : resolve('.');
      const args = ['tsx', script, '--lib', dir, '--rounds', String(ROUNDS), '--calls', String(CHAIN_CALLS), ...(withGpu ? [] : ['--no-gpu'])];
      const text = execFileSync('npx', args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      runs[side].push(JSON.parse(text.trim().split('\n').pop()!));
    }
  }
  const rows = CASES.map((c) => {
    const b = runs.base.map((r) => r[c.name]).filter((v): v is number => typeof v === 'number');
    const n = runs.new.map((r) => r[c.name]).filter((v): v is number => typeof v === 'number');
    if (!b.length || !n.length) return [c.name, '—', '—', 'no gpu here'];
    return [c.name, formatSeconds(median(b)), formatSeconds(median(n)), `${(median(n) / median(b)).toFixed(3)}×`];
  });
  console.log(`## call path A/B: this checkout against ${baseDir} (${processes} processes a side, alternating; medians over processes of per-process medians of ${ROUNDS} rounds)\n`);
  console.log(markdownTable([{ header: 'case' }, { header: 'base', align: 'right' }, { header: 'new', align: 'right' }, { header: 'new ÷ base', align: 'right' }], rows));
  process.exit(0);
}

const libs = { base: await load(baseDir!), new: await load('.') };
const gpuHere = withGpu && (await libs.new.availableTargets()).includes('gpu');
const rows: string[][] = [];
for (const c of CASES) {
  if (c.name.startsWith('gpu') && !gpuHere) {
    rows.push([c.name, '—', '—', 'no gpu here']);
    continue;
  }
  const prepared = { base: await c.prepare(libs.base), new: await c.prepare(libs.new) };
  const perCall: Record<'base' | 'new', number[]> = { base: [], new: [] };
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which side goes first, so that neither always follows the other's garbage.
    for (const side of round % 2 === 0 ? (['base', 'new'] as const) : (['new', 'base'] as const)) {
      const p = prepared[side];
      const t = await timeCalls(p.call, { warmup: p.callsPerRun > 1 ? 2 : 2000, samples: 5, minSampleSeconds: p.callsPerRun > 1 ? 0.05 : 0.02 });
      perCall[side].push(t.medianSeconds / p.callsPerRun);
    }
  }
  const [b, n] = [median(perCall.base), median(perCall.new)];
  rows.push([c.name, formatSeconds(b), formatSeconds(n), `${(n / b).toFixed(3)}×`]);
}
console.log(`## call path A/B: this checkout against ${baseDir} (${ROUNDS} alternating rounds, medians of per-call medians)\n`);
console.log(markdownTable([{ header: 'case' }, { header: 'base', align: 'right' }, { header: 'new', align: 'right' }, { header: 'new ÷ base', align: 'right' }], rows));
await libs.base.shutdown();
await libs.new.shutdown();
