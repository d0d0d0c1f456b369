/**
 * Runs the Python peers (bench/peers/*.py). The benchmark installs nothing: it looks for an
 * interpreter that already has the modules, and when there is none the peer is skipped with the
 * reason printed.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Interpreters to try, in order. `python3` on PATH may be a pyenv or venv interpreter without
 * Numba while the system one has Debian's python3-numba, so the system path is tried too.
 */
const INTERPRETERS = ['python3', '/usr/bin/python3'];

const PEERS_DIR = fileURLToPath(new URL('../peers/', import.meta.url));

/** One peer's numbers, as the scripts print them (see bench/peers/workloads.py). */
export interface PythonPeerResult {
  readonly peer: string;
  readonly median_s: number;
  readonly runs_s: readonly number[];
  /** 'ok', or what is wrong with the peer's output. */
  readonly check: string;
  readonly dtype: string;
  /** Numba: compiling the ufunc; CuPy: the first launch, which compiles (NVRTC) and loads. */
  readonly compile_s?: number;
  /** CuPy: the median over REPS of BACK_TO_BACK launches between two events, ÷ BACK_TO_BACK (s per launch); `median_s` is one launch between two events. */
  readonly back_to_back_s?: number;
  readonly back_to_back_launches?: number;
  readonly h2d_s?: number;
  readonly h2d_bytes?: number;
  readonly d2h_s?: number;
  readonly d2h_bytes?: number;
  /** `cp.asnumpy` into a new array, wall time. */
  readonly d2h_fresh_s?: number;
}

export interface PythonPeerReport {
  readonly workload: string;
  readonly size: number;
  readonly reps: number;
  readonly python: string;
  readonly numpy: string;
  readonly numba?: string;
  readonly threads?: number;
  readonly threading_layer?: string;
  readonly cupy?: string;
  readonly device?: string;
  readonly results: readonly PythonPeerResult[];
  readonly skipped: readonly { readonly peer: string; readonly reason: string }[];
}

export type Found<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

function canImport(interpreter: string, modules: readonly string[]): boolean {
  const probe = spawnSync(interpreter, ['-c', `import ${modules.join(', ')}`], { stdio: 'ignore', timeout: 60_000 });
  return probe.status === 0;
}

/**
 * The first interpreter that can import all of `preferred`, else the first that can import all of
 * `required` (a subset: e.g. NumPy without Numba still gives the NumPy peer).
 *
 * @param preferred modules wanted, e.g. `['numpy', 'numba']`
 * @param required modules without which the peer cannot run, e.g. `['numpy']`
 * @returns the interpreter's command, or why there is none
 * @example
 * const python = findPython(['numpy', 'numba'], ['numpy']);
 */
export function findPython(preferred: readonly string[], required: readonly string[] = preferred): Found<string> {
  for (const modules of [preferred, required]) {
    const interpreter = INTERPRETERS.find((candidate) => canImport(candidate, modules));
    if (interpreter) return { ok: true, value: interpreter };
  }
  return { ok: false, reason: `no Python among ${INTERPRETERS.join(', ')} can import ${required.join(' and ')}` };
}

/**
 * Runs `bench/peers/<script> WORKLOAD SIZE REPS` and parses the JSON it prints.
 *
 * @param interpreter from {@link findPython}
 * @param script file name in bench/peers
 * @param workload the workload's name, as bench/peers/workloads.py knows it
 * @param size items per call
 * @param reps timed runs after the script's own warm-up
 * @param timeoutSeconds the script is killed after this long
 * @returns the script's report, or why there is none
 */
export function runPythonPeer(
  interpreter: string,
  script: string,
  workload: string,
  size: number,
  reps: number,
  timeoutSeconds: number,
): Found<PythonPeerReport> {
  const run = spawnSync(interpreter, [PEERS_DIR + script, workload, String(size), String(reps)], {
    encoding: 'utf8',
    timeout: timeoutSeconds * 1000,
    maxBuffer: 64 * 1024 * 1024,
    // no __pycache__ left in bench/peers
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
  });
  if (run.error) return { ok: false, reason: `${script} did not run: ${run.error.message}` };
  if (run.status !== 0) {
    const why = run.stderr.trim().split('\n').slice(-3).join(' / ') || `signal ${run.signal}`;
    return { ok: false, reason: `${script} failed (exit ${run.status}): ${why}` };
  }
  const lastLine = run.stdout.trim().split('\n').at(-1) ?? '';
  try {
    return { ok: true, value: JSON.parse(lastLine) as PythonPeerReport };
  } catch {
    return { ok: false, reason: `${script} printed no JSON result: ${lastLine.slice(0, 200)}` };
  }
}
