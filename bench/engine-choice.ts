/**
 * How well the cpu target's engine choice by measurement (src/targets/cpu/engine-calibration.ts)
 * chooses: per kernel, fresh ufuncs are calibrated as users' first calls calibrate them (a dozen
 * calls with ordinary typed arrays, outputs allocated by the call), optionally while other
 * processes load the machine (`--load N` busy loops, as on a shared machine); then, with no load,
 * the JS and Wasm engines are timed forced (`setEngineMode`), in turns (across libraries too), and
 * each calibration's choice is judged: time of the engine it chose ÷ time of the faster. Goal
 * (issue 20): ≤ 1.1× on every kernel. Kernels: the corpus (bench/corpus/kernels.ts) and a few
 * written here, outside it.
 * A kernel whose elements leave a loop at different iterations has a third form, its Wasm loop in
 * masked lanes (element-loops.ts), timed forced too (`__testing.setLanesTake('all')`) and judged
 * alike ("Wasm masked"); so does a per-row kernel of 32-bit rows that keeps true doubles, its
 * Wasm loop with them in pairs of vectors, 4 rows per vector (row-pairs.ts; forced by emit-rows.ts
 * `__testing.setFloatPairs(true)`: "Wasm pairs"); and so does a per-row kernel with a loop whose
 * iterations are independent, rows one after another with that loop in lanes along the row
 * (along-rows.ts; forced by `__testing.setAlongRows(true)`: "Wasm along").
 *
 *   npx tsx bench/engine-choice.ts [--target cpu|parallel] [--load N] [--calibrations K] [--only a,b] [--quick] [--base DIR]
 *
 * `--base DIR`: also a base checkout's library (its src/ and bench/corpus/, e.g.
 * `git archive main src bench/corpus package.json tsconfig.json | tar -x -C DIR` and a node_modules
 * link), calibrated in turns with this one under the same load: an A/B of the choice.
 *
 * The judging times are per call the lower of the wall time and the process's CPU time, as the
 * calibration's own trials are timed (the least over samples: other work on the machine only adds
 * time), so the verdict does not move with the load the calibration had: the wall time leaves out
 * V8's helper threads (a concurrent collection of a fresh output counts in the process's CPU time
 * on a 16-core host), the CPU time the waits for a core on a loaded one.
 *
 * `--target parallel`: the same for the parallel target's choice of the engine its workers run
 * (calibrated from the workers' own chunk times, engine-calibration.ts `recordTurns`): fresh
 * parallel ufuncs calibrated by awaited calls with ordinary arrays, then each form forced on the
 * workers, judged by the wall time of an awaited call (the least over samples: what users wait for;
 * the CPU time would add the workers' threads up). Calls stay on the workers: placement.ts's
 * measured choice of the calling thread for brief calls is turned off, as it would judge where a
 * call runs rather than the engine the workers run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { callArgument, makeInput } from './corpus/inputs.js';
import type { CorpusKernel, Operand } from './corpus/kernels.js';
import { formatRatio, formatSeconds } from './lib/format.js';
import { describeMachine, machineMarkdown, machineSlug } from './lib/machine.js';
import { markdownTable } from './lib/markdown.js';
import { mulberry32 } from '../tests/random.js';

const argv = process.argv.slice(2);
const flag = (name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const quick = argv.includes('--quick');
const load = Number(flag('--load') ?? 0);
const calibrations = Number(flag('--calibrations') ?? (quick ? 1 : 3));
const only = flag('--only')?.split(',');
const baseDir = flag('--base');
const target = (flag('--target') ?? 'cpu') as 'cpu' | 'parallel';
if (target !== 'cpu' && target !== 'parallel') throw new Error(`--target: 'cpu' or 'parallel', found ${String(target)}`);
/**
 * A fresh ufunc is called until `explain` no longer says its engine is a guess until measured (a
 * calibration of four candidates can take 14 calls), at most this many times; a calibration still
 * undecided then is judged by the guess it runs.
 */
const MAX_CALIBRATING_CALLS = 40;
const SAMPLES = quick ? 3 : 7;

type Ufunc = ((...args: unknown[]) => Promise<unknown>) & { explain: (...args: unknown[]) => string };
type Form = 'js' | 'wasm' | 'wasm-masked' | 'wasm-pairs' | 'wasm-along';
interface Library {
  readonly name: string;
  readonly setEngineMode: (mode: 'auto' | 'js' | 'wasm') => 'auto' | 'js' | 'wasm';
  readonly setLanesTake: (which: 'uniform' | 'all') => void;
  /** Absent in checkouts before row-pairs.ts. */
  readonly setFloatPairs?: (on: boolean | undefined) => void;
  /** Absent in checkouts before along-rows.ts. */
  readonly setAlongRows?: (on: boolean | undefined) => void;
  readonly kernels: readonly Kernel[];
  readonly shutdown: () => Promise<void>;
  /** The parallel target's placement by measurement, on or off (`--target parallel` turns it off). */
  readonly measuredPlacement: (on: boolean) => boolean;
  /** Where the library has it: a hook that sees what the workers measured in each trial call (parallel/index.ts `__testing.turnTimes`). */
  readonly turnTimes?: (hook: TurnHook | undefined) => unknown;
  /** Where the library has it: a hook that sees every trial of the calling thread's calibration (engine-calibration.ts `__testing.observeTrials`). */
  readonly observeTrials?: (hook: ((engine: Form, secondsPerIndex: number) => void) | undefined) => unknown;
  /** Where the library has it: forgets every calibration (ufuncs of the same code share one since engine-calibration.ts `shapesOf`). */
  readonly forgetCalibrations?: () => void;
}
type TurnHook = (engines: readonly Form[], measured: readonly number[], times: readonly { mean: number; least: number }[]) => readonly number[];
/** A kernel as one library builds it. */
interface Kernel {
  readonly name: string;
  readonly corpus: boolean;
  readonly size: number;
  readonly make: () => Ufunc;
  readonly inputs: CorpusKernel['inputs'];
}

type Vectorize = (signatures: string[], options?: object) => (kernel: (...args: never[]) => unknown) => Ufunc;
type Guvectorize = (signatures: string[], layout: string, options?: object) => (kernel: (...args: never[]) => void) => Ufunc;
type V = { [i: number]: number; length: number };
const N = 1 << 20;

/** Kernels outside the corpus: the choice must hold for kernels nobody measured it on. */
function outside(vectorize_: Vectorize, guvectorize_: Guvectorize): Kernel[] {
  const vectorize: Vectorize = (signatures, options) => vectorize_(signatures, { target, ...options });
  const guvectorize: Guvectorize = (signatures, layout, options) => guvectorize_(signatures, layout, { target, ...options });
  const arr = (dtype: 'float32' | 'float64' | 'int32', shape: number[], low: number, high: number) => ({ dtype, shape, low, high });
  return [
    { name: 'softplus-f64', corpus: false, size: N, make: () => vectorize(['float64(float64)'])((x: number) => Math.log1p(Math.exp(x))), inputs: (n) => [arr('float64', [n], -8, 8)] },
    { name: 'smoothstep-f32', corpus: false, size: N, make: () => vectorize(['float32(float32, float32, float32)'])((e0: number, e1: number, x: number) => { const t = Math.min(Math.max((x - e0) / (e1 - e0), 0), 1); return t * t * (3 - 2 * t); }), inputs: (n) => [{ scalar: 0.2, dtype: 'float32' }, { scalar: 0.8, dtype: 'float32' }, arr('float32', [n], 0, 1)] },
    { name: 'xorshift-i32', corpus: false, size: N, make: () => vectorize(['int32(int32)'])((x: number) => { let h = x ^ (x << 13); h ^= h >> 17; return h ^ (h << 5); }), inputs: (n) => [arr('int32', [n], -1e9, 1e9)] },
    { name: 'escape-f64', corpus: false, size: N / 2, make: () => vectorize(['int32(float64)'])((c: number) => { let z = 0; let n = 0; while (n < 60 && z * z < 4) { z = z * z + c; n++; } return n; }), inputs: (n) => [arr('float64', [n], -2, 0.25)] },
    { name: 'growth-break-f32', corpus: false, size: N / 2, make: () => vectorize(['float32(float32)'])((x: number) => { let s = x; for (let i = 0; i < 64; i++) { if (s > 1000) break; s = s * 1.5 + 1; } return s; }), inputs: (n) => [arr('float32', [n], 0, 500)] },
    { name: 'collatz-steps', corpus: false, size: N / 4, make: () => vectorize(['int32(int32)'])((x: number) => { let n = x; let steps = 0; while (n > 1 && steps < 500) { n = n % 2 === 0 ? n / 2 : 3 * n + 1; steps++; } return steps; }), inputs: (n) => [arr('int32', [n], 1, 10000)] },
    { name: 'row-norm-f64', corpus: false, size: N / 64, make: () => guvectorize(['void(float64[:], float64[:])'], '(n)->()')((x: V, out: V) => { let s = 0; for (let i = 0; i < x.length; i++) s += x[i]! * x[i]!; out[0] = Math.sqrt(s); }), inputs: (n) => [arr('float64', [n, 64], -1, 1)] },
    // Loops along the row whose iterations are independent (along-rows.ts): a map and a stencil.
    { name: 'scale-clip-rows-f32', corpus: false, size: N / 64, make: () => guvectorize(['void(float32[:], float32, float32[:])'], '(n),()->(n)')((x: V, k: number, out: V) => { for (let i = 0; i < x.length; i++) out[i] = Math.min(Math.max(x[i]! * k, -1), 1); }), inputs: (n) => [arr('float32', [n, 64], -2, 2), { scalar: 0.75, dtype: 'float32' }] },
    { name: 'stencil5-rows-f64', corpus: false, size: N / 256, make: () => guvectorize(['void(float64[:], float64[:])'], '(n)->(n)')((x: V, out: V) => { const n = x.length; out[0] = x[0]!; out[1] = x[1]!; for (let i = 2; i < n - 2; i++) out[i] = 0.1 * x[i - 2]! + 0.2 * x[i - 1]! + 0.4 * x[i]! + 0.2 * x[i + 1]! + 0.1 * x[i + 2]!; out[n - 2] = x[n - 2]!; out[n - 1] = x[n - 1]!; }), inputs: (n) => [arr('float64', [n, 256], -1, 1)] },
    { name: 'one-long-row-f32', corpus: false, size: 1, make: () => guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')((x: V, out: V) => { let acc = 0; for (let i = 0; i < x.length; i++) { acc = acc * 0.5 + x[i]!; out[i] = acc; } }), inputs: (n) => [arr('float32', [n, N], -1, 1)] },
  ];
}

async function load_(dir: string, name: string): Promise<Library> {
  const at = (path: string) => import(pathToFileURL(resolve(dir, path)).href);
  const index = await at('src/index.ts');
  const loops = await at('src/targets/cpu/wasm/element-loops.ts');
  const { CORPUS } = (await at('bench/corpus/kernels.ts')) as { CORPUS: CorpusKernel[] };
  const corpus: Kernel[] = CORPUS.map((k) => ({ name: k.name, corpus: true, size: Math.max(1, Math.round(quick ? k.fullSize / 16 : k.fullSize)), make: () => k.makeUfunc(target) as unknown as Ufunc, inputs: k.inputs }));
  const more = outside(index.vectorize as Vectorize, index.guvectorize as Guvectorize).map((k) => ({ ...k, size: quick && k.size > 1 ? k.size / 16 : k.size }));
  const kernels = [...corpus, ...more].filter((k) => !only || only.includes(k.name));
  const rows = await at('src/targets/cpu/wasm/emit-rows.ts');
  const parallel = await at('src/targets/parallel/index.ts');
  const along = await at('src/targets/cpu/wasm/along-rows.ts').catch(() => undefined);
  const calibration = await at('src/targets/cpu/engine-calibration.ts');
  const library: Library = { observeTrials: calibration.__testing?.observeTrials, forgetCalibrations: calibration.__testing?.forgetCalibrations, name, setEngineMode: index.setEngineMode, setLanesTake: loops.__testing.setLanesTake, setFloatPairs: rows.__testing?.setFloatPairs, setAlongRows: along?.__testing?.setAlongRows, kernels, shutdown: index.shutdown, measuredPlacement: parallel.__testing.measuredPlacement, turnTimes: parallel.__testing.turnTimes };
  if (target === 'parallel') library.measuredPlacement(false);
  return library;
}

const here = fileURLToPath(new URL('..', import.meta.url));
const libraries = [await load_(here, 'this checkout'), ...(baseDir ? [await load_(baseDir, 'base')] : [])];
const names = libraries[0]!.kernels.map((k) => k.name);

/** `n` processes that keep a core busy each, until stopped. */
function busyLoops(n: number): ChildProcess[] {
  return Array.from({ length: n }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
}

/** Seconds of the process's CPU time. */
const cpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/** Starts timing a judged call; the function returned gives its seconds (see the header): the wall time on the parallel target, else the lower of the wall and the process's CPU time. */
function startClock(): () => number {
  const wall = performance.now();
  if (target === 'parallel') return () => (performance.now() - wall) / 1000;
  const cpu = cpuSeconds();
  return () => Math.min((performance.now() - wall) / 1000, cpuSeconds() - cpu);
}

/** Seconds per call of each form (Infinity: the kernel has no such form), and each calibration's choice. */
type Verdict = Record<Form, number> & { readonly chosen: Form[]; readonly calls: number[] };

/**
 * What `explain` says of the engine: on the parallel target, after where the call runs ("On 2
 * workers (…), each running ", or "On the calling thread (…): ").
 */
function engineText(explained: string): string {
  return explained.replace(/^On .*?(?:running |\): )(?=JavaScript|WebAssembly)/, '');
}

/** The form a calibrated call runs, from `explain`: a Wasm loop in lanes where the scalar form gives that reason is the masked form. */
function formOf(explainedAll: string, scalarExplainedAll: string): Form {
  const explained = engineText(explainedAll);
  const scalarExplained = engineText(scalarExplainedAll);
  if (explained.startsWith('JavaScript')) return 'js';
  if (/^WebAssembly \(SIMD, 4 rows per vector \(float64 values in pairs/.test(explained)) return 'wasm-pairs';
  if (/^WebAssembly \(rows one after another/.test(explained)) return 'wasm-along';
  return /^WebAssembly \(SIMD/.test(explained) && /^WebAssembly \(scalar: elements leave a loop/.test(scalarExplained) ? 'wasm-masked' : 'wasm';
}

/** What `explain` says of a call with the Wasm engine forced (the scalar form where there are two). */
function scalarExplain(lib: Library, f: Ufunc, args: unknown[]): string {
  const before = lib.setEngineMode('wasm');
  try {
    return f.explain(...args);
  } finally {
    lib.setEngineMode(before);
  }
}

/** A form's time ÷ the fastest form's. */
const ratioOf = (v: Record<Form, number>, e: Form) => v[e] / Math.min(v.js, v.wasm, v['wasm-masked'], v['wasm-pairs'], v['wasm-along']);

/**
 * A fresh ufunc of `k` compiled with one of the Wasm engine's variant forms switched on by `set`
 * (a `__testing` hook), where the kernel has that form — `explain` then matches `form` — else
 * undefined. Its own ufunc: compiled kernels are cached per layout, not per hook.
 */
function variantUfunc(lib: Library, k: Kernel, args: unknown[], set: ((on: boolean | undefined) => void) | undefined, form: RegExp): Ufunc | undefined {
  if (!set) return undefined;
  const before = lib.setEngineMode('wasm');
  set(true);
  try {
    const variant = k.make();
    return form.test(engineText(variant.explain(...args))) ? variant : undefined;
  } finally {
    set(undefined);
    lib.setEngineMode(before);
  }
}

/** With true doubles in pairs of vectors (row-pairs.ts), where its row loop has that form. */
const pairedUfunc = (lib: Library, k: Kernel, args: unknown[]) => variantUfunc(lib, k, args, lib.setFloatPairs, /^WebAssembly \(SIMD, 4 rows per vector \(float64 values in pairs/);
/** With rows one after another and loops along the row (along-rows.ts), where it has such a loop. */
const alongUfunc = (lib: Library, k: Kernel, args: unknown[]) => variantUfunc(lib, k, args, lib.setAlongRows, /^WebAssembly \(rows one after another/);

const started = performance.now();
const verdicts = libraries.map(() => new Map<string, Verdict>());
for (const name of names) {
  const next = mulberry32(7);
  const kernels = libraries.map((l) => l.kernels.find((k) => k.name === name)!);
  const args = kernels[0]!.inputs(kernels[0]!.size).map((r) => callArgument(makeInput(r, next) as Operand | number));
  // Calibrations in turns across libraries, each a fresh ufunc's first calls, under the load asked for.
  const chosen = libraries.map((): Form[] => []);
  // The calls each calibration took to decide (MAX_CALIBRATING_CALLS + 1: undecided).
  const callsTaken = libraries.map((): number[] => []);
  // What the workers measured in the trial calls (the parallel target): per form, the best over calls of the mean and of the least chunk time.
  const trialTimes = libraries.map(() => new Map<Form, { mean: number; least: number }>());
  const loops = busyLoops(load);
  try {
    for (let c = 0; c < calibrations; c++) {
      for (const [i, k] of kernels.entries()) {
        libraries[i]!.forgetCalibrations?.(); // a fresh ufunc's first calls, not the last calibration's choice
        const f = k.make();
        libraries[i]!.turnTimes?.((engines, measured, times) => {
          engines.forEach((e, t) => {
            const was = trialTimes[i]!.get(e) ?? { mean: Infinity, least: Infinity };
            trialTimes[i]!.set(e, { mean: Math.min(was.mean, times[t]!.mean), least: Math.min(was.least, times[t]!.least) });
          });
          return measured;
        });
        // The trials the calling thread's calibration timed, in order, for stderr.
        const trials: string[] = [];
        libraries[i]!.observeTrials?.((engine, perIndex) => trials.push(`${engine} ${formatSeconds(perIndex * k.size)}`));
        let calls = 0;
        try {
          // Until decided; a call that is not measured (one engine only) is not called at all.
          while (calls < MAX_CALIBRATING_CALLS && /A guess until measured/.test(f.explain(...args))) {
            await f(...args);
            calls++;
          }
        } finally {
          libraries[i]!.turnTimes?.(undefined);
          libraries[i]!.observeTrials?.(undefined);
        }
        const decided = !/A guess until measured/.test(f.explain(...args));
        callsTaken[i]!.push(decided ? calls : MAX_CALIBRATING_CALLS + 1);
        chosen[i]!.push(formOf(f.explain(...args), scalarExplain(libraries[i]!, f, args)));
        if (trials.length) process.stderr.write(`${name} (${libraries[i]!.name}) calibration ${c + 1}: ${trials.join(', ')} → ${decided ? `${chosen[i]!.at(-1)} after ${calls} calls` : `undecided after ${calls} calls`}\n`);
      }
    }
  } finally {
    for (const p of loops) p.kill();
  }
  // The engines forced, with no load: seconds per call (startClock), the least over samples taken in turns —
  // across libraries too, so that neither judges in the other's wake (a memory-bound kernel's fresh
  // 32 MiB outputs leave the collector work that lands on whatever runs next).
  const judged = kernels.map((k, i) => {
    const lib = libraries[i]!;
    const f = k.make();
    // The masked form on a ufunc of its own: compiled kernels are cached per layout, not per `setLanesTake`.
    const masked = k.make();
    const paired = pairedUfunc(lib, k, args);
    const along = alongUfunc(lib, k, args);
    const forms: Form[] = /^WebAssembly \(scalar: elements leave a loop/.test(engineText(scalarExplain(lib, f, args))) ? ['js', 'wasm', 'wasm-masked'] : ['js', 'wasm'];
    if (paired) forms.push('wasm-pairs');
    if (along) forms.push('wasm-along');
    return { lib, f, masked, paired, along, forms, best: { js: Infinity, wasm: Infinity, 'wasm-masked': Infinity, 'wasm-pairs': Infinity, 'wasm-along': Infinity } as Record<Form, number> };
  });
  for (let s = 0; s < SAMPLES + 1; s++) {
    for (const { lib, f, masked, paired, along, forms, best } of judged) {
      // The order moves on each sample: in a fixed order the Wasm form, always timed right after
      // JS, measured 1.17× and 1.25× the same code timed in a later slot (softmax, log-returns on the
      // 16-core host, whose "pairs" and "along" columns then ran the 2-row code: see above).
      for (const form of [...forms.slice(s % forms.length), ...forms.slice(0, s % forms.length)]) {
        const before = lib.setEngineMode(form === 'js' ? 'js' : 'wasm');
        if (form === 'wasm-masked') lib.setLanesTake('all');
        // On while the call runs too: the kernels a call compiles at its first run (the calling
        // thread's kernel for ordinary arrays staged in blocks, the workers' kernel for the staged
        // operands' layout) are not those `explain` compiled; made without the hook they would be
        // the 2-row form, which the "along" and "pairs" columns then timed on the cpu target.
        if (form === 'wasm-pairs') lib.setFloatPairs!(true);
        if (form === 'wasm-along') lib.setAlongRows!(true);
        try {
          const elapsed = startClock();
          await (form === 'wasm-masked' ? masked : form === 'wasm-pairs' ? paired! : form === 'wasm-along' ? along! : f)(...args);
          if (s > 0) best[form] = Math.min(best[form], elapsed()); // the first of each: warm-up
        } finally {
          lib.setEngineMode(before);
          lib.setLanesTake('uniform');
          if (form === 'wasm-pairs') lib.setFloatPairs!(undefined);
          if (form === 'wasm-along') lib.setAlongRows!(undefined);
        }
      }
    }
  }
  for (const [i, { lib, best }] of judged.entries()) {
    verdicts[i]!.set(name, { ...best, chosen: chosen[i]!, calls: callsTaken[i]! });
    const worst = Math.max(...chosen[i]!.map((e) => ratioOf(best, e)));
    const trials = [...trialTimes[i]!].map(([e, t]) => `${e} ${formatSeconds(t.mean)}/${formatSeconds(t.least)}`).join(', ');
    process.stderr.write(`${name} (${lib.name}): JS ${formatSeconds(best.js)}, Wasm ${formatSeconds(best.wasm)}${Number.isFinite(best['wasm-masked']) ? `, Wasm masked ${formatSeconds(best['wasm-masked'])}` : ''}${Number.isFinite(best['wasm-pairs']) ? `, Wasm pairs ${formatSeconds(best['wasm-pairs'])}` : ''}${Number.isFinite(best['wasm-along']) ? `, Wasm along ${formatSeconds(best['wasm-along'])}` : ''}, chose ${chosen[i]!.join(' ')}: worst ${formatRatio(worst)}${trials ? `; the workers' trials, per loop index, mean/least chunk: ${trials}` : ''}\n`);
  }
}

const rows = names.map((name) => {
  const k = libraries[0]!.kernels.find((x) => x.name === name)!;
  return [name, k.corpus ? 'yes' : 'no', ...verdicts.flatMap((m) => {
    const v = m.get(name)!;
    return [formatSeconds(v.js), formatSeconds(v.wasm), Number.isFinite(v['wasm-masked']) ? formatSeconds(v['wasm-masked']) : '—', Number.isFinite(v['wasm-pairs']) ? formatSeconds(v['wasm-pairs']) : '—', Number.isFinite(v['wasm-along']) ? formatSeconds(v['wasm-along']) : '—', v.chosen.map((e, c) => `${e} (${v.calls[c]! > MAX_CALIBRATING_CALLS ? 'undecided' : v.calls[c]})`).join(' '), formatRatio(Math.max(...v.chosen.map((e) => ratioOf(v, e))))];
  })];
});
const summary = libraries.map((l, i) => {
  const all = [...verdicts[i]!.values()].flatMap((v) => v.chosen.map((e) => ratioOf(v, e)));
  const within = all.filter((r) => r <= 1.1).length;
  return `- ${l.name}: ${within} of ${all.length} calibrations chose an engine within 1.1× of the faster; worst ${formatRatio(Math.max(...all))}`;
});
const machine = describeMachine({ summary: 'not used by this benchmark' });
const columns = [{ header: 'kernel' }, { header: 'corpus' }, ...libraries.flatMap((l) => {
  const p = libraries.length > 1 ? `${l.name}: ` : '';
  return [{ header: `${p}JS`, align: 'right' as const }, { header: `${p}Wasm`, align: 'right' as const }, { header: `${p}Wasm masked`, align: 'right' as const }, { header: `${p}Wasm pairs`, align: 'right' as const }, { header: `${p}Wasm along`, align: 'right' as const }, { header: `${p}chosen` }, { header: `${p}worst chosen ÷ best`, align: 'right' as const }];
})];
const report = [
  `# Engine choice by measurement${target === 'parallel' ? ' on the parallel target (the engine its workers run)' : ''}: chosen ÷ best engine${quick ? ' (quick run: sizes ÷ 16)' : ''}`,
  '',
  `\`npx tsx bench/engine-choice.ts ${argv.join(' ')}\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${((performance.now() - started) / 1000).toFixed(0)} s`,
  '',
  machineMarkdown(machine),
  '',
  `Each kernel: ${calibrations} fresh ${target === 'parallel' ? 'parallel ' : ''}ufunc(s) per library calibrated by ${target === 'parallel' ? 'awaited ' : ''}calls with ordinary typed arrays until \`explain\` says the engine was chosen by measurement (at most ${MAX_CALIBRATING_CALLS})${load ? ` while ${load} busy loop(s) ran` : ''}; then JS, Wasm and (where the kernel has them) Wasm with its loops in masked lanes, Wasm with its rows' doubles in pairs of vectors and Wasm with rows one after another and loops along the row forced${target === 'parallel' ? ' on the workers (placement on the calling thread by measurement off), wall time per awaited call' : ', the lower of wall and CPU time per call'}, the least of ${SAMPLES} samples in turns. "chosen": each calibration's form, with the calls it took to decide; "worst chosen ÷ best": the worst of them against the fastest form (goal ≤ 1.1×).`,
  '',
  ...summary,
  '',
  markdownTable(columns, rows),
  '',
].join('\n');
console.log(report);
const out = flag('--out') ?? fileURLToPath(new URL(`./results/engine-choice-${target === 'parallel' ? 'parallel-' : ''}${machineSlug(machine)}${quick ? '-quick' : only ? '-partial' : ''}.md`, import.meta.url));
writeFileSync(out, report);
for (const l of libraries) await l.shutdown();
