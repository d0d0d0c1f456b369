/**
 * A/B of the call path (issue 21: one front), in one process: the library of this checkout
 * against the library of another checkout (`--base DIR`, e.g. a `git worktree` of the commit
 * before), measured in alternating rounds so that the machine's noise falls on both alike.
 *
 *   git worktree add --detach /tmp/ufunc-base <commit> && ln -s $PWD/node_modules /tmp/ufunc-base/
 *   npx tsx bench/front-ab.ts --base /tmp/ufunc-base [--rounds 7] [--calls 1000] [--no-gpu] [--cases cpu,per-row] [--cpu-time]
 *   npx tsx bench/front-ab.ts --base /tmp/ufunc-base --processes 6   # one library per process
 *
 * In one process the two libraries disturb each other (which one loaded second, and the GPU
 * device each makes, moved the ratios by 15–30 % on the 2-core VM); `--processes N` runs N
 * processes per side instead, alternating sides, each timing one library (`--lib DIR --json`).
 *
 * Measures what users wait for: a 1-element cpu call (awaited and `.sync`, output given; `.sync`
 * allocating it), cpu calls large enough to run as Wasm (SAXPY, and a per-row kernel whose
 * compiled kernel is keyed by its core axes' names too), and chains of small gpu calls on device arrays ended by one `toHost()` (SAXPY
 * 4,096 float32 into `out`; a per-row guvectorize call, 64 rows of 64, into `out`), per call.
 * Prints each side's median per round and the ratio new ÷ base.
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
if (!baseDir && !libDir) throw new Error('usage: npx tsx bench/front-ab.ts --base DIR [--rounds N] [--calls N] [--no-gpu] [--processes N] [--cases a,b] [--cpu-time]');
const ROUNDS = Number(flag('--rounds') ?? 7);
const CHAIN_CALLS = Number(flag('--calls') ?? 1000);
const withGpu = !argv.includes('--no-gpu');
/** `--cases a,b`: only the cases whose names contain one of these. */
const caseFilter = flag('--cases')?.split(',');

// The library's entry, loosely typed: the two checkouts' types need not agree.
interface Library {
  vectorize(sigs: string[], options?: object): (kernel: Function) => ((...args: unknown[]) => Promise<unknown>) & { sync(...args: unknown[]): unknown };
  guvectorize(sigs: string[], layout: string, options?: object): (kernel: Function) => ((...args: unknown[]) => Promise<unknown>) & { sync(...args: unknown[]): unknown };
  toDevice(data: Float32Array | { data: Float32Array; shape: number[] }): Promise<{ toHost(): Promise<unknown> }>;
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
const scaleRow = (x: Float32Array, a: number, out: Float32Array) => {
  for (let i = 0; i < x.length; i++) out[i] = a * x[i]!;
};

const ALL_CASES: Case[] = [
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
    name: '1-element cpu call, `f.sync(2, x, y)` (output allocated)',
    async prepare(lib) {
      const f = lib.vectorize(['float32(float32, float32, float32)'], { target: 'cpu' })(saxpyKernel);
      const [x, y] = [Float32Array.of(1), Float32Array.of(2)];
      return { call: () => f.sync(2, x, y), callsPerRun: 1 };
    },
  },
  {
    name: 'cpu call as Wasm: SAXPY 4,096 float32, ordinary arrays, `f.sync(2, x, y, { out })`',
    async prepare(lib) {
      const f = lib.vectorize(['float32(float32, float32, float32)'], { target: 'cpu' })(saxpyKernel);
      const n = 4096;
      const [x, y, z] = [Float32Array.from({ length: n }, (_, i) => i), Float32Array.from({ length: n }, (_, i) => 1 - i), new Float32Array(n)];
      return { call: () => f.sync(2, x, y, { out: z }), callsPerRun: 1 };
    },
  },
  {
    name: 'cpu call as Wasm: per-row `(n),()->(n)`, 128 × 64 float32, ordinary arrays, `f.sync(x, 2, { out })`',
    async prepare(lib) {
      const f = lib.guvectorize(['void(float32[:], float32, float32[:])'], '(n),()->(n)', { target: 'cpu' })(scaleRow);
      const x = { data: Float32Array.from({ length: 128 * 64 }, (_, i) => i), shape: [128, 64] };
      const out = { data: new Float32Array(128 * 64), shape: [128, 64] };
      return { call: () => f.sync(x, 2, { out }), callsPerRun: 1 };
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
      // One call awaited first: the gpu target loads on first use, and calls made before it has
      // loaded wait for it while `toHost()` does not, so the timed chains would run nothing.
      await f(2, x, y, { out });
      return { call: chain, callsPerRun: CHAIN_CALLS };
    },
  },
  {
    name: `gpu chain: per-row \`(n),()->(n)\`, 64 × 64 float32 into \`out\` × ${CHAIN_CALLS}, then toHost()`,
    async prepare(lib) {
      const f = lib.guvectorize(['void(float32[:], float32, float32[:])'], '(n),()->(n)', { target: 'gpu' })(scaleRow);
      const x = await lib.toDevice({ data: Float32Array.from({ length: 64 * 64 }, (_, i) => i), shape: [64, 64] });
      const out = await lib.toDevice({ data: new Float32Array(64 * 64), shape: [64, 64] });
      const chain = async () => {
        for (let k = 0; k < CHAIN_CALLS; k++) void f(x, 2, { out });
        await out.toHost();
      };
      await f(x, 2, { out });
      return { call: chain, callsPerRun: CHAIN_CALLS };
    },
  },
];

/**
 * `--cpu-time`: the cpu cases timed by the process's CPU time (user + system) instead of the wall
 * clock. They run on the calling thread, so this is their cost, which other jobs on a loaded
 * machine do not inflate as they do the wall clock. The gpu chains stay on the wall clock (a
 * software GPU's threads would count as the process's).
 */
const cpuTime = argv.includes('--cpu-time');

/** Median seconds per call of a prepared case, over samples (see `--cpu-time`). */
async function secondsPerCall(p: { call: () => unknown; callsPerRun: number }): Promise<number> {
  if (cpuTime && p.callsPerRun === 1) return cpuSecondsPerCall(p.call);
  const t = await timeCalls(p.call, { warmup: p.callsPerRun > 1 ? 2 : 2000, samples: 5, minSampleSeconds: p.callsPerRun > 1 ? 0.05 : 0.02 });
  return t.medianSeconds / p.callsPerRun;
}

/** Median CPU seconds per call over 5 batches of 20,000 calls (each awaited where it returns a promise), after 2,000. */
async function cpuSecondsPerCall(call: () => unknown): Promise<number> {
  const isAsync = typeof (call() as PromiseLike<unknown> | undefined)?.then === 'function';
  const batch = async (n: number) => {
    if (isAsync) for (let i = 0; i < n; i++) await call();
    else for (let i = 0; i < n; i++) call();
  };
  await batch(2000);
  const perCall: number[] = [];
  for (let sample = 0; sample < 5; sample++) {
    const start = process.cpuUsage();
    await batch(20000);
    const used = process.cpuUsage(start);
    perCall.push((used.user + used.system) / 1e6 / 20000);
  }
  return median(perCall);
}

const CASES = caseFilter ? ALL_CASES.filter((c) => caseFilter.some((part) => c.name.includes(part))) : ALL_CASES;

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
      perCall.push(await secondsPerCall(p));
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
      const args = ['tsx', script, '--lib', dir, '--rounds', String(ROUNDS), '--calls', String(CHAIN_CALLS), ...(withGpu ? [] : ['--no-gpu']), ...(caseFilter ? ['--cases', caseFilter.join(',')] : []), ...(cpuTime ? ['--cpu-time'] : [])];
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
  console.log(`## call path A/B: this checkout against ${baseDir} (${processes} processes a side, alternating; medians over processes of per-process medians of ${ROUNDS} rounds${cpuTime ? '; cpu cases in CPU time' : ''})\n`);
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
      perCall[side].push(await secondsPerCall(p));
    }
  }
  const [b, n] = [median(perCall.base), median(perCall.new)];
  rows.push([c.name, formatSeconds(b), formatSeconds(n), `${(n / b).toFixed(3)}×`]);
}
console.log(`## call path A/B: this checkout against ${baseDir} (${ROUNDS} alternating rounds, medians of per-call medians${cpuTime ? '; cpu cases in CPU time' : ''})\n`);
console.log(markdownTable([{ header: 'case' }, { header: 'base', align: 'right' }, { header: 'new', align: 'right' }, { header: 'new ÷ base', align: 'right' }], rows));
await libs.base.shutdown();
await libs.new.shutdown();
