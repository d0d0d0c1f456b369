/**
 * The CuPy peer of the gpu chain benchmarks (bench/peers/cupy_chain.py): one run of a named chain,
 * its JSON report, or why there is none.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** What cupy_chain.py reports, or `skipped` with the reason it did not run. */
export interface PeerChain {
  readonly wall_per_call_s?: number;
  readonly kernel_s?: number;
  readonly device?: string;
  readonly cupy?: string;
  readonly skipped?: string;
}

const PEERS_DIR = fileURLToPath(new URL('../peers/', import.meta.url));

/**
 * Runs cupy_chain.py on `chain` (a workload name it knows) with its positional arguments: size,
 * calls per chain, repetitions, warm-up seconds.
 */
export function runCupyChain(chain: string, size: number, calls: number, reps: number, warmupSeconds: number): PeerChain {
  const result = spawnSync('python3', [`${PEERS_DIR}cupy_chain.py`, chain, String(size), String(calls), String(reps), String(warmupSeconds)], {
    cwd: PEERS_DIR,
    encoding: 'utf8',
    timeout: 600_000,
  });
  if (result.error) return { skipped: `python3 could not run: ${result.error.message}` };
  if (result.status !== 0) return { skipped: `cupy_chain.py failed: ${(result.stderr || result.stdout).trim().split('\n').slice(-3).join(' ')}` };
  try {
    return JSON.parse(result.stdout) as PeerChain;
  } catch {
    return { skipped: `cupy_chain.py printed no JSON: ${result.stdout.slice(0, 200)}` };
  }
}
