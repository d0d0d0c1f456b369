/**
 * A trace of what a call on host arrays does, device by device, for benchmarks: when each chunk of
 * a chunked call is issued and when its results are home, how long the host took to copy bytes
 * into and out of staging buffers, and when staging buffers (pinned host memory) are created and
 * destroyed. Off unless a sink is set; then each event is handed to the sink as it happens (a sink
 * that writes synchronously shows what the process did last, should it die).
 */

/** One event; `t` is `performance.now()` when it happened, `device` the device slot. */
export type TransferEvent =
  | { readonly kind: 'chunk-issued' | 'chunk-done'; readonly t: number; readonly device: number; readonly chunk: number; readonly bytes: number }
  | { readonly kind: 'host-to-staging' | 'staging-to-host'; readonly t: number; readonly device: number; readonly bytes: number; readonly ms: number }
  | { readonly kind: 'staging-created'; readonly t: number; readonly device: number; readonly bytes: number; readonly direction: 'read' | 'write' }
  /** `mapState`: the buffer's as it was destroyed (never `pending`: see buffers.ts, giveStaging). */
  | { readonly kind: 'staging-destroyed'; readonly t: number; readonly device: number; readonly bytes: number; readonly direction: 'read' | 'write'; readonly mapState: string };

let sink: ((event: TransferEvent) => void) | undefined;

/**
 * Sets where transfer events go (undefined: nowhere, the default).
 *
 * @param to receives each event as it happens
 * @example
 * setTransferTrace((e) => events.push(e));
 */
export function setTransferTrace(to: ((event: TransferEvent) => void) | undefined): void {
  sink = to;
}

/** Whether a sink is set: callers skip measuring what nobody reads. */
export function tracing(): boolean {
  return sink !== undefined;
}

/**
 * Hands an event to the sink, if any.
 *
 * @param event the event
 */
export function trace(event: TransferEvent): void {
  sink?.(event);
}
