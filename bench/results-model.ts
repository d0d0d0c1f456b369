/**
 * What a benchmark run records: the contenders, their measurements, GPU transfers and the scaling
 * sweep. run.ts fills it in; report.ts turns it into Markdown, SVG and JSON.
 */
import type { Machine } from './lib/machine.js';
import type { WorkloadName } from './workloads.js';

/**
 * Everyone who runs a workload, in the order tables and charts list them, with a colour per
 * contender that every chart shares. `gpu` runs on arrays already on the device, timed by the
 * host's clock per call; `gpu kernel` is the same calls' kernels on the GPU's clock (timestamp
 * queries), as `CuPy` is timed with CUDA events; `+ transfers` takes host arrays in and gives
 * host arrays back.
 */
export const CONTENDERS = [
  { name: 'cpu', peer: false, color: '#4e79a7' },
  { name: 'parallel', peer: false, color: '#f28e2b' },
  { name: 'gpu', peer: false, color: '#59a14f' },
  { name: 'gpu kernel', peer: false, color: '#2e6b28' },
  { name: 'gpu + transfers', peer: false, color: '#8cd17d' },
  { name: 'JS loop', peer: true, color: '#79706e' },
  { name: 'NumPy', peer: true, color: '#b07aa1' },
  { name: 'Numba cpu', peer: true, color: '#9c755f' },
  { name: 'Numba parallel', peer: true, color: '#ff9da7' },
  { name: 'CuPy', peer: true, color: '#499894' },
  { name: 'CuPy + transfers', peer: true, color: '#86bcb6' },
] as const;

export type ContenderName = (typeof CONTENDERS)[number]['name'];

export const isPeer = (name: ContenderName): boolean => CONTENDERS.find((c) => c.name === name)!.peer;

export interface Measurement {
  readonly workload: WorkloadName;
  readonly contender: ContenderName;
  readonly dtype: string;
  /** Items (elements, rows, members, matrices) per call. */
  readonly size: number;
  readonly medianSeconds: number;
  readonly sampleSeconds: readonly number[];
  /**
   * The first call, which compiles: for ufunc targets parsing, typing and code generation (and
   * worker or device start-up); Numba's JIT; CuPy's NVRTC compile and module load.
   */
  readonly firstCallSeconds?: number;
  /** 'ok', or what is wrong with the output. */
  readonly check: string;
  /** cpu and parallel: the engine that ran the call (from `f.explain`), e.g. "Wasm SIMD×4", "JS". */
  readonly engine?: string;
  /**
   * cpu and parallel: time of `f.explain(…)` before the first call — parsing, typing and, where
   * the Wasm engine runs, generating, compiling and instantiating the Wasm module (no run).
   */
  readonly compileSeconds?: number;
}

export interface Transfer {
  readonly workload: WorkloadName;
  readonly contender: 'gpu' | 'CuPy';
  readonly direction: 'host→device' | 'device→host';
  readonly bytes: number;
  readonly seconds: number;
}

/** Series of the scaling sweep: the targets, the gpu both with and without transfers. */
export type ScalingSeries = 'cpu' | 'parallel' | 'gpu' | 'gpu + transfers';

export interface ScalingPoint {
  readonly workload: 'saxpy' | 'hermite';
  readonly series: ScalingSeries;
  /** Output elements (for Hermite: rows × 16). */
  readonly elements: number;
  readonly bytes: number;
  readonly medianSeconds: number;
  readonly check: string;
}

export interface PythonPeersInfo {
  readonly interpreter: string;
  readonly python: string;
  readonly numpy: string;
  readonly numba?: string;
  readonly threads?: number;
  readonly threadingLayer?: string;
  readonly cupy?: string;
  readonly device?: string;
}

export interface BenchRun {
  readonly date: string;
  readonly quick: boolean;
  /** Whether flags left out workloads, targets, peers or the sweep. */
  readonly partial: boolean;
  /** How the run was started, e.g. `npm run bench -- --quick`. */
  readonly command: string;
  readonly machine: Machine;
  readonly targets: readonly string[];
  readonly warmup: number;
  readonly samples: number;
  readonly measurements: Measurement[];
  readonly transfers: Transfer[];
  readonly scaling: ScalingPoint[];
  readonly python: { numba?: PythonPeersInfo; cupy?: PythonPeersInfo };
  /** Peers skipped and other things a reader should know, one sentence each. */
  readonly notes: string[];
}
