/**
 * The one table of targets. cpu and parallel load with the library (they can serve synchronous
 * calls); gpu loads on first use, so that programs that never use it never load WebGPU.
 */
import { TargetUnavailableError } from '../errors.js';
import { cpuTarget } from './cpu/index.js';
import { parallelTarget } from './parallel/index.js';
import { TARGET_NAMES, type Target, type TargetName } from './target.js';

const loaded: Partial<Record<TargetName, Target>> = { cpu: cpuTarget, parallel: parallelTarget };

/** The target, loaded if need be. */
export async function loadTarget(name: TargetName): Promise<Target> {
  const known = loaded[name];
  if (known) return known;
  if (name === 'gpu') {
    const { gpuTarget } = await import('./gpu/index.js');
    loaded.gpu = gpuTarget;
    return gpuTarget;
  }
  throw new TargetUnavailableError(`Unknown target \`${String(name)}\`; the targets are ${TARGET_NAMES.map((t) => `'${t}'`).join(', ')}.`);
}

/** The target if it can be had without waiting (cpu, parallel, or gpu once loaded). */
export function loadTargetSync(name: TargetName): Target | undefined {
  return loaded[name];
}

/**
 * The targets that can run here: cpu and parallel always, gpu when a WebGPU adapter is found.
 *
 * @example const targets = await availableTargets(); // ['cpu', 'parallel', 'gpu']
 */
export async function availableTargets(): Promise<TargetName[]> {
  const gpu = await import('./gpu/device.js').then((m) => m.isGpuAvailable()).catch(() => false);
  return gpu ? ['cpu', 'parallel', 'gpu'] : ['cpu', 'parallel'];
}
