/**
 * Proves the Wasm ports of `Math` functions (src/targets/cpu/wasm/math-ports.ts) bit-identical to
 * V8's `Math.*` in this process, through the public API on arrays in Wasm memory:
 * - every float32 input (all 2^32 bit patterns; for atan2, pow, hypot, 2^32 pairs in which every float32 is
 *   once y and once x): a float32 kernel in SIMD lanes (f32x4) must give
 *   `Math.fround(Math.f(x))`, the same values as doubles through a float64 kernel (f64x2) and
 *   through the scalar loop (a strided operand) `Math.f(x)`;
 * - `--float64 N` random and edge doubles per function (default 10^8: the edges of each
 *   function, then random inputs over every range of its algorithm and any bit pattern), through
 *   float64 SIMD lanes and the scalar loop.
 * - `pow^K` (e.g. `--functions pow^6,pow^2.4`): `x ** K` with the literal exponent K compiled into the
 *   kernel (math/pow.ts `powLanesOfKnownY`), a function of x alone: every float32 x (the float32
 *   kernel's K is `Math.fround(K)`, as its literal is a float32), and random and edge doubles x.
 * - `B^pow` (e.g. `--functions 2^pow,10^pow`): `B ** y` with the literal base B compiled in
 *   (`powLanesOfKnownBase`), a function of y alone, over the same inputs (y).
 * - `pow^@K` (e.g. `--functions pow^@6,pow^@2.4`): `x ** y` with y = K passed as a scalar argument
 *   of each call (`powLanesOfUniformY`: the case of y decided while the kernel runs), over the
 *   inputs of `pow^K` (the float32 kernel's K is `Math.fround(K)`, as its float32 argument is).
 * NaN matches NaN (payloads are not part of the claim). Work is sharded over worker threads in
 * chunks; prints one JSON line per function with the counts (the claim: every mismatch count 0).
 *
 *   npx tsx bench/math-exhaustive.ts [--functions sin,cos,…] [--workers N] [--float64 N]
 *                                    [--float32-chunks FROM:TO[:STEP]]   (chunks of 2^22 bit patterns, 0:1024 = all)
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { setEngineMode } from '../src/targets/cpu/wasm/index.js';
import { sharedArray, vectorize } from '../src/index.js';
import { mulberry32 } from '../tests/random.js';
import {
  ASIN_CENTRES, asinInput, ATAN_CENTRES, atan2Input, atanInput, edgeInputs, TRIG_CENTRES, trigInput, ulpsFrom,
} from '../tests/targets/cpu/wasm/math-inputs.js';
import { binaryEdges, POW_X, POW_Y, PORTED_FUNCTIONS, type PortedFunction, randomBinary, randomUnary, unaryCentres } from './lib/math-inputs.js';

/** Per function: arity, random float64 inputs (one per argument), edge values. */
interface Spec {
  readonly arity: 1 | 2;
  random(next: () => number, i: number): number[];
  readonly centres: readonly number[];
  /** Edge inputs of two arguments (pairs), instead of the centres' neighbours with a random y. */
  readonly pairs?: () => readonly (readonly number[])[];
}
/** The logarithms, powers and hyperbolic functions (bench/lib/math-inputs.ts has their inputs). */
function logPowerSpec(fn: PortedFunction): Spec {
  if (fn === 'pow' || fn === 'hypot') return { arity: 2, random: (next, i) => randomBinary(fn, next, i), centres: [], pairs: () => binaryEdges(fn) };
  let previous = 0;
  return { arity: 1, random: (next, i) => [(previous = randomUnary(fn, next, i, previous))], centres: unaryCentres(fn) };
}
const SPECS: Record<string, Spec> = {
  sin: { arity: 1, random: (next, i) => [trigInput(next, i)], centres: TRIG_CENTRES },
  cos: { arity: 1, random: (next, i) => [trigInput(next, i)], centres: TRIG_CENTRES },
  tan: { arity: 1, random: (next, i) => [trigInput(next, i)], centres: TRIG_CENTRES },
  asin: { arity: 1, random: (next, i) => [asinInput(next, i)], centres: ASIN_CENTRES },
  acos: { arity: 1, random: (next, i) => [asinInput(next, i)], centres: ASIN_CENTRES },
  atan: { arity: 1, random: (next, i) => [atanInput(next, i)], centres: ATAN_CENTRES },
  atan2: { arity: 2, random: (next, i) => atan2Input(next, i), centres: ATAN_CENTRES },
  ...Object.fromEntries(PORTED_FUNCTIONS.map((fn) => [fn, logPowerSpec(fn)])),
};

/** The exponent of `pow^K` and of `pow^@K`, or undefined for a `Math` function's name. */
function literalExponent(fn: string): number | undefined {
  const m = /^pow\^@?(.+)$/.exec(fn);
  if (!m) return undefined;
  const k = Number(m[1]);
  if (Number.isNaN(k) && m[1] !== 'NaN') throw new Error(`pow^K needs a number K, found ${m[1]}`);
  return k;
}

/** Whether the exponent of `pow^@K` is passed as a scalar argument (not compiled in). */
const exponentArgument = (fn: string): boolean => fn.startsWith('pow^@');

/** The base of `B^pow`, or undefined. */
function literalBase(fn: string): number | undefined {
  const m = /^(.+)\^pow$/.exec(fn);
  if (!m) return undefined;
  const b = Number(m[1]);
  if (Number.isNaN(b) && m[1] !== 'NaN') throw new Error(`B^pow needs a number B, found ${m[1]}`);
  return b;
}

/** The spec of `pow^K` (x only; y = K: pow's random x and its special x as edges) and of `B^pow` (y only). */
function specOf(fn: string): Spec | undefined {
  if (literalExponent(fn) !== undefined) return { arity: 1, random: (next, i) => [randomBinary('pow', next, i)[0]], centres: POW_X };
  if (literalBase(fn) !== undefined) return { arity: 1, random: (next, i) => [randomBinary('pow', next, i)[1]], centres: POW_Y };
  return SPECS[fn];
}

/** The kernel's and V8's expression of `fn` on `args` (JS source), with float32's rounded literal where `f32`. */
function expression(fn: string, args: readonly string[], f32 = false): string {
  const k = literalExponent(fn);
  const b = literalBase(fn);
  const literal = (v: number) => String(f32 ? Math.fround(v) : v);
  if (k !== undefined) return `Math.pow(${args[0]}, ${literal(k)})`;
  if (b !== undefined) return `Math.pow(${literal(b)}, ${args[0]})`;
  return `Math.${fn}(${args.join(', ')})`;
}

const CHUNK_BITS = 22;
const CHUNK = 1 << CHUNK_BITS;
const FLOAT32_CHUNKS = 2 ** 32 / CHUNK;
const FLOAT64_CHUNK = 1 << 20;

type Job = { kind: 'float32'; fn: string; chunk: number } | { kind: 'float64'; fn: string; chunk: number; count: number };
interface Counts {
  float32: number; float32Lanes: number; float32AsDoubleLanes: number; float32AsDoubleScalar: number;
  float64: number; float64Lanes: number; float64Scalar: number; first: string;
}
const zero = (): Counts => ({ float32: 0, float32Lanes: 0, float32AsDoubleLanes: 0, float32AsDoubleScalar: 0, float64: 0, float64Lanes: 0, float64Scalar: 0, first: '' });

if (isMainThread) await main();
else worker();

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
  const functions = flag('--functions')?.split(',') ?? Object.keys(SPECS);
  for (const f of functions) if (!specOf(f)) throw new Error(`unknown function ${f}: choose from ${Object.keys(SPECS).join(', ')}, pow^K, pow^@K, B^pow`);
  const workers = Number(flag('--workers') ?? availableParallelism());
  const float64 = Number(flag('--float64') ?? 1e8);
  const [from, to, step = 1] = (flag('--float32-chunks') ?? `0:${FLOAT32_CHUNKS}`).split(':').map(Number) as [number, number, number?];
  const jobs: Job[] = [];
  for (const fn of functions) {
    for (let chunk = from; chunk < to; chunk += step) jobs.push({ kind: 'float32', fn, chunk });
    for (let done = 0, chunk = 0; done < float64; done += FLOAT64_CHUNK, chunk++) jobs.push({ kind: 'float64', fn, chunk, count: Math.min(FLOAT64_CHUNK, float64 - done) });
  }
  const totals = new Map(functions.map((f) => [f, zero()]));
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(workers, jobs.length) }, () => new Promise<void>((resolve, reject) => {
    const w = startWorker();
    const give = () => {
      if (next < jobs.length) w.postMessage(jobs[next++]);
      else void w.terminate().then(() => resolve());
    };
    w.on('message', (m: { fn: string; counts: Counts }) => {
      const t = totals.get(m.fn)!;
      for (const k of Object.keys(t) as (keyof Counts)[]) {
        if (k === 'first') t.first ||= m.counts.first;
        else t[k] += m.counts[k];
      }
      give();
    });
    w.on('error', reject);
    give();
  })));
  const seconds = +((performance.now() - t0) / 1000).toFixed(1);
  for (const [fn, t] of totals) console.log(JSON.stringify({ fn, float32Chunks: `${from}:${to}${step === 1 ? '' : `:${step}`} of ${FLOAT32_CHUNKS}`, ...t, workers, seconds }));
}

/**
 * A worker running this script. Node 20 workers do not inherit tsx's module hooks, so a small
 * bootstrap registers tsx (its ESM API, found through its exports map) before importing it.
 */
function startWorker(): Worker {
  const manifest = createRequire(import.meta.url).resolve('tsx/package.json');
  const entry = (JSON.parse(readFileSync(manifest, 'utf8')) as { exports: Record<string, { import: { default: string } }> }).exports['./esm/api']!.import.default;
  const tsx = new URL(entry, pathToFileURL(manifest)).href;
  return new Worker(`import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(import.meta.url)}); });`, { eval: true });
}

function worker(): void {
  setEngineMode('wasm');
  const kernels = new Map<string, ReturnType<typeof makeKernels>>();
  parentPort!.on('message', (job: Job) => {
    let k = kernels.get(job.fn);
    if (!k) kernels.set(job.fn, (k = makeKernels(job.fn)));
    const counts = job.kind === 'float32' ? float32Job(job.fn, k, job.chunk) : float64Job(job.fn, k, job.chunk, job.count);
    parentPort!.postMessage({ fn: job.fn, counts });
  });
  void workerData;
}

/** The arrays a worker computes in (for two arguments at most), shared by its functions' kernels. */
let arrays: ReturnType<typeof allocate> | undefined;
function allocate() {
  return {
    in32: [sharedArray(CHUNK, 'float32'), sharedArray(CHUNK, 'float32')],
    in64: [sharedArray(CHUNK), sharedArray(CHUNK)],
    out32: sharedArray(CHUNK, 'float32'),
    out64: sharedArray(CHUNK),
    // The scalar loop: operands at every other element.
    strided: [sharedArray(2 * CHUNK), sharedArray(2 * CHUNK)],
    stridedOut: sharedArray(2 * CHUNK),
    want: new Float64Array(CHUNK),
    want32: new Float32Array(CHUNK),
  };
}
const view = (data: Float64Array, n: number) => ({ data, shape: [n], strides: [2] });

/** A ufunc called with as many operands as its function's arity (known only at run time here). */
interface AnyArity {
  sync(...operands: unknown[]): unknown;
  explain(...operands: unknown[]): string;
}

function makeKernels(fn: string) {
  const { arity } = specOf(fn)!;
  const params = arity === 1 ? ['x'] : ['y', 'x'];
  const [k, b] = [literalExponent(fn), literalBase(fn)];
  // pow^K, B^pow: the literal as JS reads it (String(v) gives the double back; the float32 kernel rounds it)
  const literal = (v: number) => (Object.is(v, -0) ? '-0' : String(v));
  // pow^@K: y a scalar argument of every call, after the array x
  const argument = exponentArgument(fn);
  if (argument) params.push('y');
  const source = argument ? 'x ** y' : k !== undefined ? `x ** (${literal(k)})` : b !== undefined ? `(${literal(b)}) ** x` : `Math.${fn}(${params.join(', ')})`;
  const body = new Function(...params, `return ${source}`) as (...a: number[]) => number;
  const f32 = vectorize([`float32(${params.map(() => 'float32').join(', ')})`])(body) as unknown as AnyArity;
  const f64 = vectorize([`float64(${params.map(() => 'float64').join(', ')})`])(body) as unknown as AnyArity;
  const a = (arrays ??= allocate());
  const scalars = argument ? [k!] : [];
  const kernels = { ...a, f32, f64, in32: a.in32.slice(0, arity), in64: a.in64.slice(0, arity), strided: a.strided.slice(0, arity), scalars };
  const lanes32 = f32.explain(...kernels.in32, ...scalars, { out: kernels.out32 });
  const lanes64 = f64.explain(...kernels.in64, ...scalars, { out: kernels.out64 });
  const scalar = f64.explain(...kernels.strided.map((s) => view(s, CHUNK)), ...scalars, { out: view(kernels.stridedOut, CHUNK) });
  // pow^@K: the lanes of the exponent of the call (call-exponent.ts), which explain names
  const ofCall = (text: string) => !argument || text.includes('exponent the same for the whole call');
  if (!lanes32.startsWith('WebAssembly (SIMD, 4 lanes') || !lanes64.startsWith('WebAssembly (SIMD, 2 lanes') || !scalar.startsWith('WebAssembly (scalar') || !ofCall(lanes32) || !ofCall(lanes64)) {
    throw new Error(`unexpected engines: ${lanes32} / ${lanes64} / ${scalar}`);
  }
  return kernels;
}

/**
 * V8's results into `want`: a loop compiled per function, so that V8 inlines its `Math.f` call
 * (a call through a variable holding one of several functions would not be).
 */
type WantLoop = (xs: readonly Float64Array[], want: Float64Array, n: number) => void;
const wantLoops = new Map<string, WantLoop>();
function computeWant(fn: string, xs: readonly Float64Array[], want: Float64Array | Float32Array, n: number, f32 = false): void {
  const key = `${fn} ${f32}`;
  let loop = wantLoops.get(key);
  if (!loop) {
    const args = xs.map((_, j) => `x${j}[i]`);
    loop = new Function('xs', 'want', 'n', `const [${xs.map((_, j) => `x${j}`).join(', ')}] = xs; for (let i = 0; i < n; i++) want[i] = ${expression(fn, args, f32)};`) as WantLoop;
    wantLoops.set(key, loop);
  }
  loop(xs, want as Float64Array, n);
}

const words = (a: Float64Array | Float32Array) => new Int32Array(a.buffer, a.byteOffset, a.byteLength / 4);

/**
 * Counts the elements of `got` (every `stride`-th) whose bits differ from `want`'s, NaN matching
 * NaN; names the first in `first`.
 */
function mismatches(got: Float64Array | Float32Array, want: Float64Array | Float32Array, n: number, stride: number, describe: (i: number) => string, c: Counts): number {
  const g = words(got);
  const w = words(want);
  const perValue = got.BYTES_PER_ELEMENT / 4;
  let bad = 0;
  for (let i = 0; i < n; i++) {
    const gi = i * stride * perValue;
    const wi = i * perValue;
    if (g[gi] === w[wi] && (perValue === 1 || g[gi + 1] === w[wi + 1])) continue;
    const a = got[i * stride]!;
    const b = want[i]!;
    if (a !== a && b !== b) continue;
    bad++;
    c.first ||= describe(i);
  }
  return bad;
}

function float32Job(fn: string, k: ReturnType<typeof makeKernels>, chunk: number): Counts {
  const c = zero();
  const { arity } = specOf(fn)!;
  const bits = k.in32.map((a) => new Int32Array(a.buffer, a.byteOffset, CHUNK));
  const base = chunk * CHUNK;
  for (let i = 0; i < CHUNK; i++) bits[0]![i] = (base + i) | 0;
  // atan2's x: a bijection of the 32-bit patterns (an odd multiplier), so each float32 is x once.
  if (arity === 2) for (let i = 0; i < CHUNK; i++) bits[1]![i] = Math.imul(base + i, 0x9e3779b1);
  k.in32.forEach((a, j) => {
    k.in64[j]!.set(a);
    const s = k.strided[j]!;
    for (let i = 0; i < CHUNK; i++) s[2 * i] = a[i]!;
  });
  k.f32.sync(...k.in32, ...k.scalars, { out: k.out32 });
  k.f64.sync(...k.in64, ...k.scalars, { out: k.out64 });
  k.f64.sync(...k.strided.map((s) => view(s, CHUNK)), ...k.scalars, { out: view(k.stridedOut, CHUNK) });
  computeWant(fn, k.in64, k.want, CHUNK);
  // the float32 kernel's own result, rounded once (pow^K: its K is the float32 literal)
  if (literalExponent(fn) === undefined && literalBase(fn) === undefined) k.want32.set(k.want);
  else computeWant(fn, k.in64, k.want32, CHUNK, true);
  const describe = (what: string, got: Float64Array | Float32Array, stride: number, want: Float64Array | Float32Array) => (i: number) =>
    `${what} ${fn}(${k.in64.map((a) => a[i]).join(', ')}) = ${got[i * stride]}, V8 ${want[i]}`;
  c.float32Lanes = mismatches(k.out32, k.want32, CHUNK, 1, describe('float32 lanes', k.out32, 1, k.want32), c);
  c.float32AsDoubleLanes = mismatches(k.out64, k.want, CHUNK, 1, describe('float64 lanes', k.out64, 1, k.want), c);
  c.float32AsDoubleScalar = mismatches(k.stridedOut, k.want, CHUNK, 2, describe('scalar', k.stridedOut, 2, k.want), c);
  c.float32 = CHUNK;
  return c;
}

function float64Job(fn: string, k: ReturnType<typeof makeKernels>, chunk: number, count: number): Counts {
  const c = zero();
  const spec = specOf(fn)!;
  const next = mulberry32(0x5eed + chunk * 7919 + fn.length);
  let filled = 0;
  const put = (args: readonly number[]) => {
    args.forEach((v, j) => (k.in64[j]![filled] = k.strided[j]![2 * filled] = v));
    filled++;
  };
  // The first chunk starts with every double within 2,000 ulps of each edge (both signs, ±0, ±∞, NaN).
  if (chunk === 0 && spec.pairs) for (const p of spec.pairs().slice(0, count)) put(p);
  else if (chunk === 0) {
    for (const x of edgeInputs(2000, 1, (v) => v, ulpsFrom, spec.centres).slice(0, count)) put(spec.arity === 1 ? [x] : [x, spec.random(next, filled)[1]!]);
  }
  while (filled < count) put(spec.random(next, filled));
  const lanes = k.in64.map((a) => a.subarray(0, count));
  k.f64.sync(...lanes, ...k.scalars, { out: k.out64.subarray(0, count) });
  k.f64.sync(...k.strided.map((s) => view(s, count)), ...k.scalars, { out: view(k.stridedOut, count) });
  computeWant(fn, k.in64, k.want, count);
  const describe = (what: string, got: Float64Array, stride: number) => (i: number) =>
    `${what} ${fn}(${k.in64.map((a) => a[i]).join(', ')}) = ${got[i * stride]}, V8 ${k.want[i]}`;
  c.float64Lanes = mismatches(k.out64, k.want, count, 1, describe('float64 lanes', k.out64, 1), c);
  c.float64Scalar = mismatches(k.stridedOut, k.want, count, 2, describe('float64 scalar', k.stridedOut, 2), c);
  c.float64 = count;
  return c;
}
