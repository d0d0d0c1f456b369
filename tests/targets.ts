/**
 * The targets every shared suite runs on: cpu and parallel always, gpu where a WebGPU adapter
 * exists (lavapipe in CI, which requires it — see gpu-available.ts).
 */
import type { TargetName } from '../src/index.js';
import { gpuAvailable } from './gpu-available.js';

export const TARGETS: TargetName[] = gpuAvailable ? ['cpu', 'parallel', 'gpu'] : ['cpu', 'parallel'];

/** Targets that compute float64 (WGSL has none). */
export const FLOAT64_TARGETS: TargetName[] = TARGETS.filter((t) => t !== 'gpu');
