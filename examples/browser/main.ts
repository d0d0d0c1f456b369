/**
 * The examples in a page: Hermite (seed table), SAXPY and one Lorenz-96 step on every target the
 * page offers, each compared with the cpu target's answer. Built and served by serve.mjs beside
 * this file (`npm run example:browser`), which bundles it with esbuild for the browser.
 *
 * Results go to the page and to `window.ufuncResults` (the browser test reads them there).
 */
import { availableTargets, type NDArray, setParallelOptions, type TargetName, TargetUnavailableError } from '../../src/index.js';
import { seedTable } from '../hermite.js';
import { runLorenz } from '../lorenz96.js';
import { runSaxpy } from '../saxpy.js';

interface Check {
  readonly example: string;
  readonly target: TargetName;
  readonly elements: number;
  /** Largest |target − cpu| over the compared elements. */
  readonly maxDifference: number;
  readonly tolerance: number;
  readonly ok: boolean;
  readonly ms: number;
}

interface Results {
  done: boolean;
  crossOriginIsolated: boolean;
  /** Whether this thread has `Atomics.waitAsync` (false with `?waitAsync=0`). */
  waitAsync: boolean;
  targets: TargetName[];
  /** Targets that refused to run here, with their message. */
  unavailable: { target: TargetName; error: string; message: string }[];
  checks: Check[];
  error?: string;
}

// `?waitAsync=0`: the page as in a browser without `Atomics.waitAsync`. The parallel target then
// polls, on this thread and in its workers (worker.ts removes it there too).
const search = (globalThis as unknown as { location: { search: string } }).location.search;
if (new URLSearchParams(search).get('waitAsync') === '0') {
  delete (Atomics as { waitAsync?: unknown }).waitAsync;
  setParallelOptions({ workerUrl: new URL('./worker.js?waitAsync=0', import.meta.url) });
}

const results: Results = {
  done: false,
  crossOriginIsolated: (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true,
  waitAsync: typeof (Atomics as { waitAsync?: unknown }).waitAsync === 'function',
  targets: [],
  unavailable: [],
  checks: [],
};
(globalThis as { ufuncResults?: Results }).ufuncResults = results;

// Typed here so that the examples compile with the project's lib (no DOM).
const page = globalThis as unknown as { document: { querySelector(selector: string): { textContent: string | null } | null } };
const log = page.document.querySelector('#log')!;
function show(line: string): void {
  log.textContent += `${line}\n`;
}

function maxDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Infinity;
  let max = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(Number(a[i]) - Number(b[i]));
    max = Number.isNaN(d) ? Infinity : Math.max(max, d);
  }
  return max;
}

/** What each example computes on a target, as flat numbers to compare with the cpu's. */
const examples: Record<string, (target: TargetName) => Promise<ArrayLike<number>>> = {
  'hermite seed table': async (target) => {
    const { fromScalar, inPlace } = await seedTable(target);
    return [...(fromScalar.data as Float32Array), ...(inPlace.data as Float32Array)];
  },
  'saxpy, 1,048,576 float32': async (target) => (await runSaxpy(target, 1 << 20)).z,
  'lorenz96 RK4 step, 2,000 × 40': async (target) => ((await runLorenz(target, 2000)).result as NDArray).data as Float32Array,
};

/** cpu and parallel agree bit for bit; the gpu within float32 rounding of the kernels' operations. */
const tolerance = (target: TargetName): number => (target === 'gpu' ? 1e-3 : 0);

async function main(): Promise<void> {
  const offered = await availableTargets();
  results.targets = offered;
  show(`targets offered here: ${offered.join(', ')}; cross-origin isolated: ${results.crossOriginIsolated}`);
  const reference: Record<string, ArrayLike<number>> = {};
  for (const [name, run] of Object.entries(examples)) reference[name] = await run('cpu');
  for (const target of ['parallel', 'gpu'] as const) {
    for (const [name, run] of Object.entries(examples)) {
      const t0 = performance.now();
      let values: ArrayLike<number>;
      try {
        values = await run(target);
      } catch (error) {
        if (!(error instanceof TargetUnavailableError)) throw error;
        results.unavailable.push({ target, error: error.name, message: error.message });
        show(`${target}: unavailable here: ${error.message}`);
        break;
      }
      const ms = performance.now() - t0;
      const difference = maxDifference(values, reference[name]!);
      const check: Check = { example: name, target, elements: values.length, maxDifference: difference, tolerance: tolerance(target), ok: difference <= tolerance(target), ms };
      results.checks.push(check);
      show(`${check.ok ? 'ok  ' : 'FAIL'} ${name} on ${target}: ${values.length} values, max |${target} − cpu| = ${difference} (${ms.toFixed(1)} ms)`);
    }
  }
}

main()
  .catch((error: unknown) => {
    results.error = error instanceof Error ? `${error.name}: ${error.message}\n${error.stack ?? ''}` : String(error);
    show(`error: ${results.error}`);
  })
  .finally(() => {
    results.done = true;
  });
