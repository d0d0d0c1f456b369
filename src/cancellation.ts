/**
 * Cancellation and time limits of calls (the `signal` and `timeout` call options), and the
 * `shutdown()` epoch. Targets ask here whether a call must stop and for the error it rejects with;
 * how they stop work is theirs (parallel: terminate workers; gpu: destroy the device; cpu: it
 * cannot, see docs/reliability.md).
 */
import { CallAbortedError, type CallCancelledError, CallTimeoutError, ShutdownError } from './errors.js';
import type { CallLimits } from './plan.js';

/**
 * The limits of a call from its options, or undefined when it has none.
 *
 * @param options - the call's `signal` and `timeout`
 * @returns the limits, with the deadline counted from now
 * @example
 * limitsOf({ timeout: 100 }); // { timeout: 100, deadline: performance.now() + 100 }
 */
export function limitsOf(options: { readonly signal?: AbortSignal; readonly timeout?: number }): CallLimits | undefined {
  const { signal, timeout } = options;
  if (signal === undefined && (timeout === undefined || timeout === Infinity)) return undefined;
  return {
    ...(signal ? { signal } : {}),
    ...(timeout !== undefined && timeout !== Infinity ? { timeout, deadline: performance.now() + timeout } : {}),
  };
}

/**
 * The error a call with these limits stops with now, or undefined while it may go on.
 *
 * @param limits - the call's limits
 * @param target - the target's name, for the message
 * @returns a `CallAbortedError` or `CallTimeoutError`, or undefined
 * @example
 * const stop = limitExceeded(plan.limits, 'parallel'); if (stop) throw stop;
 */
export function limitExceeded(limits: CallLimits | undefined, target: string): CallCancelledError | undefined {
  if (!limits) return undefined;
  if (limits.signal?.aborted) {
    const reason = limits.signal.reason as unknown;
    const why = reason instanceof Error ? `: ${reason.message}` : reason === undefined ? '' : `: ${String(reason)}`;
    return new CallAbortedError(`The call on the ${target} target was aborted by its \`signal\`${why}. Its outputs may be partially written.`, { cause: reason });
  }
  if (limits.deadline !== undefined && performance.now() >= limits.deadline) {
    return new CallTimeoutError(`The call on the ${target} target did not finish within its \`timeout\` of ${limits.timeout} ms and was stopped. Its outputs may be partially written.`);
  }
  return undefined;
}

/**
 * Resolves with the error the call stops with once its signal aborts or its deadline passes;
 * `dispose()` stops watching (call it when the call ends, so no timer is left behind).
 *
 * @param limits - the call's limits
 * @param target - the target's name, for the message
 * @returns the watch
 * @example
 * const watch = watchLimits(plan.limits, 'gpu');
 * try { await Promise.race([work, watch.stopped.then((e) => { throw e; })]); } finally { watch.dispose(); }
 */
export function watchLimits(limits: CallLimits, target: string): { readonly stopped: Promise<CallCancelledError>; dispose(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  const stopped = new Promise<CallCancelledError>((resolve) => {
    const now = limitExceeded(limits, target);
    if (now) return resolve(now);
    if (limits.signal) {
      onAbort = () => resolve(limitExceeded(limits, target)!);
      limits.signal.addEventListener('abort', onAbort, { once: true });
    }
    if (limits.deadline !== undefined) {
      const fire = () => {
        const stop = limitExceeded(limits, target);
        if (stop) resolve(stop);
        else timer = setTimeout(fire, Math.max(1, limits.deadline! - performance.now()));
      };
      timer = setTimeout(fire, Math.max(0, limits.deadline - performance.now()));
    }
  });
  return {
    stopped,
    dispose() {
      if (timer) clearTimeout(timer);
      if (onAbort) limits.signal?.removeEventListener('abort', onAbort);
    },
  };
}

/** Counts `shutdown()` calls: a call that sees it change while in flight was stopped by one. */
let epoch = 0;

/** The current shutdown epoch (see {@link shutdownEpoch}). */
export function shutdownEpoch(): number {
  return epoch;
}

let announceShutdown!: () => void;
/** Resolves at the next `shutdown()`. */
let nextShutdown = new Promise<void>((resolve) => (announceShutdown = resolve));

/** Starts a new shutdown epoch; called by `shutdown()`. */
export function beginShutdown(): void {
  epoch++;
  announceShutdown();
  nextShutdown = new Promise<void>((resolve) => (announceShutdown = resolve));
}

/**
 * Resolves at the next `shutdown()`: a call in flight races its work against it, so that it
 * rejects at once even where its work cannot be stopped (a kernel running on an abandoned device).
 *
 * @example
 * await Promise.race([work, whenShutdown().then(() => { throw shutdownError('gpu'); })]);
 */
export function whenShutdown(): Promise<void> {
  return nextShutdown;
}

/**
 * The error of a call that `shutdown()` stopped.
 *
 * @param target - the target's name
 * @param cause - what the call failed with
 * @param restarts - what later calls start again: the target's workers, or its device
 * @returns the ShutdownError
 * @example
 * throw shutdownError('parallel', e);
 */
export function shutdownError(target: string, cause?: unknown, restarts: 'device' | 'workers' = 'workers'): ShutdownError {
  return new ShutdownError(
    `The call on the ${target} target was stopped by \`shutdown()\` while it was running. Its outputs may be partially written; later calls start the ${restarts} again.`,
    cause === undefined ? undefined : { cause },
  );
}
