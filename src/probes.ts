/**
 * Probes: what tests watch of a call that its results do not show — whether the plan cache served
 * it, where the parallel target ran it and on which engine, whether its inputs were copied while
 * the workers computed, whether the gpu target streamed it in chunks. Not part of the public API.
 *
 * The library reports each such event as `probes.name?.(…)`. Outside tests no probe is set, so a
 * report reads one property and finds nothing: no counter is kept, no argument is evaluated
 * (optional chaining skips them) and nothing is allocated. A test sets the probes it watches and
 * deletes them after (tests/call-paths.ts counts them).
 *
 * @internal
 */
export interface Probes {
  /** A call was served from the plan cache (plan-cache.ts) rather than planned. */
  cachedCall?(): void;
  /** The parallel target handed a call to its pool. */
  poolCall?(): void;
  /** The pool's threads run a call as Wasm (rather than as the generated JS runner). */
  wasmJob?(): void;
  /** An awaited pool call has its inputs copied in chunk by chunk while the workers compute. */
  pipelinedJob?(): void;
  /** An awaited pool call's calling thread copied a chunk's results back to an ordinary output while the job still ran. */
  resultChunkCopiedEarly?(): void;
  /**
   * The parallel target ran a call (of a non-empty loop) on the calling thread; `unsplittable`:
   * because several loop indices write the same output elements, so its loop may not be split.
   */
  callingThreadCall?(unsplittable: boolean): void;
  /** The gpu target recorded a call with the layout, pipeline and bindings of an earlier one (call-memos.ts). */
  memoisedCall?(): void;
  /** The gpu target runs a call in chunks (its host operands exceed the memory limit). */
  streamedCall?(): void;
  /** A chunk of a streamed call has started; `inFlight` chunks of the call run now, itself included. */
  streamedChunk?(inFlight: number): void;
}

/** The probes set now: none outside tests. */
export const probes: Probes = {};
