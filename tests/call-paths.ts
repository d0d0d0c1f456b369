/**
 * Counts of what the library reports to its probes (src/probes.ts), for tests that check which
 * path a call took: the plan cache, the parallel target's pool or calling thread, the workers'
 * Wasm engine, the input pipeline, the gpu target's streaming in chunks. Importing this module sets the probes (each test file runs in
 * its own process, vitest.config.ts), and counting starts from 0.
 */
import { probes } from '../src/probes.js';

const counts = { cachedCalls: 0, pool: 0, callingThread: 0, unsplittable: 0, wasmJobs: 0, pipelinedJobs: 0, earlyResultChunks: 0 };
const streaming = { streamedCalls: 0, chunks: 0, maxInFlight: 0 };
let memoisedCalls = 0;

probes.cachedCall = () => void counts.cachedCalls++;
probes.poolCall = () => void counts.pool++;
probes.wasmJob = () => void counts.wasmJobs++;
probes.pipelinedJob = () => void counts.pipelinedJobs++;
probes.resultChunkCopiedEarly = () => void counts.earlyResultChunks++;
probes.callingThreadCall = (unsplittable) => {
  counts.callingThread++;
  if (unsplittable) counts.unsplittable++;
};
probes.streamedCall = () => void streaming.streamedCalls++;
probes.memoisedCall = () => void memoisedCalls++;
probes.streamedChunk = (inFlight) => {
  streaming.chunks++;
  streaming.maxInFlight = Math.max(streaming.maxInFlight, inFlight);
};

/** Calls served from the plan cache so far. */
export function cachedCalls(): number {
  return counts.cachedCalls;
}

/** Parallel-target calls so far by where they ran; `reset` zeroes the counts. */
export function callCounts(reset = false): { pool: number; callingThread: number; unsplittable: number } {
  const { pool, callingThread, unsplittable } = counts;
  if (reset) counts.pool = counts.callingThread = counts.unsplittable = 0;
  return { pool, callingThread, unsplittable };
}

/** Pool calls run as Wasm so far; `reset` zeroes the count. */
export function wasmJobs(reset = false): number {
  const n = counts.wasmJobs;
  if (reset) counts.wasmJobs = 0;
  return n;
}

/** Awaited pool calls whose inputs were copied while the workers computed; `reset` zeroes the count. */
export function pipelinedJobs(reset = false): number {
  const n = counts.pipelinedJobs;
  if (reset) counts.pipelinedJobs = 0;
  return n;
}

/** Chunks whose results an awaited pool call copied back to an ordinary output while its job still ran; `reset` zeroes the count. */
export function earlyResultChunks(reset = false): number {
  const n = counts.earlyResultChunks;
  if (reset) counts.earlyResultChunks = 0;
  return n;
}

/**
 * The gpu target's streamed calls so far: calls run in chunks, chunks run over all of them, and
 * the most chunks of one call in flight at once.
 */
export function streamingStats(): { streamedCalls: number; chunks: number; maxInFlight: number } {
  return { ...streaming };
}

/** gpu calls recorded with an earlier call's layout, pipeline and bindings (call-memos.ts) so far. */
export function memoisedGpuCalls(): number {
  return memoisedCalls;
}
