/**
 * `shutdown()`: stops what the library runs beside the calling thread — the parallel target's
 * worker pool and the gpu target's device — for a clean exit or to recover from stuck work.
 */
import { beginShutdown } from './cancellation.js';
import { shutdownTargets } from './targets/registry.js';

/**
 * Terminates the parallel target's workers and lets go of the gpu target's device (destroyed once
 * the work already on it ends). Calls in flight on them reject with a `ShutdownError` (their
 * outputs may be partially written); device arrays are lost. It does not wait for kernels to
 * finish, so it never hangs, even on a kernel that never ends. Later calls start new workers or a
 * new device.
 *
 * @returns once the workers are gone
 * @example
 * process.once('SIGINT', () => void shutdown().then(() => process.exit(130)));
 */
export async function shutdown(): Promise<void> {
  beginShutdown();
  await shutdownTargets();
}
