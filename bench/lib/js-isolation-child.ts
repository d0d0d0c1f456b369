/**
 * One process of bench/js-engine-isolation.ts, bundled by it with esbuild and run by plain `node`
 * (tsx's own loader detaches an ArrayBuffer as it starts, which is the very effect measured).
 *
 *   node child.mjs <kernel> <before> <size-divisor>
 *
 * Runs `before` first — `none`, `wasm` (a Wasm call on ordinary arrays: the cpu target's usual
 * engine for them) or `parallel` (a call on the parallel target) — then times `<kernel>` on the JS
 * engine (`setEngineMode('js')`), or the hand-written loop `user-loop` (no ufunc: the user's own
 * code in the same process): CPU time of the process per call, of the warm-up calls and after
 * them. Prints one JSON line.
 * The bundler points its imports of the library and the corpus at the checkout measured.
 */
import { guvectorize, setEngineMode, shutdown } from '../../src/index.js';
import { CORPUS } from '../corpus/kernels.js';
import { callArgument, makeInput } from '../corpus/inputs.js';

const [name, before, divisor] = process.argv.slice(2) as [string, 'none' | 'wasm' | 'parallel', string];
const WARMUP = 3;
const SAMPLES = 9;

/** A seeded uniform generator (mulberry32), so every process gets the same data. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** What runs before: a Wasm call or a parallel call of another kernel, on ordinary arrays, as a program does. */
async function runBefore(): Promise<void> {
  if (before === 'none') return;
  const saxpy = CORPUS.find((k) => k.name === 'saxpy-f64')!;
  const next = seeded(11);
  const args = saxpy.inputs(2 ** 20).map((r) => callArgument(makeInput(r, next)));
  const f = saxpy.makeUfunc(before === 'wasm' ? 'cpu' : 'parallel') as unknown as (...a: unknown[]) => Promise<unknown>;
  const was = setEngineMode(before === 'wasm' ? 'wasm' : 'auto');
  for (let i = 0; i < 3; i++) await f(...args);
  setEngineMode(was);
}

type Call = () => unknown;

/** A user's function over typed arrays it is handed. */
function userSaxpy(a: number, x: Float32Array, y: Float32Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = a * x[i]! + y[i]!;
}

/** The timed call. */
function timed(): Call {
  const next = seeded(7);
  if (name === 'user-loop') {
    // A user's own loop over typed arrays: no ufunc at all.
    const n = Math.round(2 ** 22 / Number(divisor));
    const x = new Float32Array(n).map(() => next() * 2 - 1);
    const y = new Float32Array(n).map(() => next() * 2 - 1);
    const out = new Float32Array(n);
    return () => userSaxpy(2, x, y, out);
  }
  if (name === 'one-long-row-f32') {
    // A per-row kernel over one row of 2^20 (bench/engine-choice.ts's kernel outside the corpus).
    type V = { [i: number]: number; length: number };
    const f = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')((x: V, out: V) => {
      let acc = 0;
      for (let i = 0; i < x.length; i++) {
        acc = acc * 0.5 + x[i]!;
        out[i] = acc;
      }
    }) as unknown as { sync: (...a: unknown[]) => unknown };
    const n = Math.round(2 ** 20 / Number(divisor));
    const x = { data: new Float32Array(n).map(() => next() * 2 - 1), shape: [1, n] };
    return () => f.sync(x);
  }
  const k = CORPUS.find((c) => c.name === name);
  if (!k) throw new Error(`No corpus kernel named ${name}.`);
  const f = k.makeUfunc('cpu') as unknown as { sync: (...a: unknown[]) => unknown };
  const args = k.inputs(Math.max(1, Math.round(k.fullSize / Number(divisor)))).map((r) => callArgument(makeInput(r, next)));
  return () => f.sync(...args);
}

await runBefore();
setEngineMode('js');
const call = timed();
// The warm-up calls are timed too: calibration's trials are a ufunc's first calls.
const first: number[] = [];
for (let i = 0; i < WARMUP; i++) {
  const t = cpuMs();
  call();
  first.push(cpuMs() - t);
}
const ms: number[] = [];
for (let s = 0; s < SAMPLES; s++) {
  const t = cpuMs();
  call();
  ms.push(cpuMs() - t);
}
console.log(JSON.stringify({ first, ms }));
await shutdown();
