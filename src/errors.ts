/**
 * Every error this library throws is a `UfuncError`; each kind has its own subclass so callers can
 * `catch (e) { if (e instanceof BroadcastError) … }`. Messages are full sentences that say what was
 * expected, what was found and where (signature column, kernel line:column, argument number from 1).
 */
export class UfuncError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Where in a source text (a signature, a layout or a kernel) something was found. 1-based. */
export interface SourceLocation {
  readonly line: number;
  readonly column: number;
  /** The text the position is in (a kernel's or helper's source), where known: run-time errors quote its line. */
  readonly source?: string;
  /** The function `source` is the text of, where the kernel or helper was given as one: run-time errors say the position in its file. */
  readonly fn?: Function;
}

/** A type signature such as `float32(float32, int32[:])` could not be parsed or does not fit. */
export class SignatureError extends UfuncError {
  constructor(
    message: string,
    /** The signature text, when the error is about one. */
    readonly signature?: string,
    /** 1-based column in `signature`. */
    readonly column?: number,
  ) {
    super(message);
  }
}

/** A layout string such as `(m,n),(n,p)->(m,p)` could not be parsed or does not fit the call. */
export class LayoutError extends UfuncError {
  constructor(
    message: string,
    readonly layout?: string,
    readonly column?: number,
  ) {
    super(message);
  }
}

/** The arguments' shapes cannot be broadcast together, or core dimensions disagree. */
export class BroadcastError extends UfuncError {}

/** An argument has the wrong kind, dtype or count, or no signature accepts the call's inputs. */
export class ArgumentError extends UfuncError {}

/** The kernel uses a construct outside the kernel language, or is ill-typed. */
export class KernelCompileError extends UfuncError {
  constructor(
    message: string,
    /** Position in the kernel's own source (`fn.toString()`), 1-based. */
    readonly location?: SourceLocation,
  ) {
    super(message);
  }
}

/**
 * A function given to `fuse` composes ufunc calls that cannot run as one kernel (a guvectorize
 * ufunc, a method other than a trailing `reduce`, ufuncs of different targets, arithmetic on a
 * traced array, …). The message names the call and says why; `fuse(fn, { unfusable: 'separate' })`
 * runs such compositions as separate calls instead.
 */
export class FusionError extends UfuncError {}

/** The kernel threw while running (e.g. a failed bounds check), on any target. */
export class KernelRuntimeError extends UfuncError {}

/** The requested target cannot run here (no GPU adapter, no worker threads) or cannot run this kernel. */
export class TargetUnavailableError extends UfuncError {}

/** Something failed on the device after the call started (validation error, device lost). */
export class DeviceError extends UfuncError {}

/**
 * A worker of the parallel target stopped (it exited or ran out of memory) while it was running
 * part of a call. The call's outputs may be partially written; the pool has replaced the worker,
 * so the next call runs normally.
 */
export class WorkerError extends UfuncError {}

/**
 * A call stopped before it finished: its `signal` was aborted ({@link CallAbortedError}), its
 * `timeout` passed ({@link CallTimeoutError}), or `shutdown()` ran while it was in flight
 * ({@link ShutdownError}). Outputs the call was writing may be partially written.
 */
export class CallCancelledError extends UfuncError {}

/** The call's `signal` was aborted; `cause` is the signal's reason. */
export class CallAbortedError extends CallCancelledError {}

/** The call ran past its `timeout`. */
export class CallTimeoutError extends CallCancelledError {}

/** `shutdown()` stopped the worker pool or the GPU device while the call was in flight. */
export class ShutdownError extends CallCancelledError {}
