/**
 * `ufunc/cluster`: ufuncs as data, and the workers that run chunk jobs from a Redis queue.
 * Calls over Zarr arrays reach a cluster through `mapChunks(…, { cluster })` of `ufunc/zarr`.
 */
import '../platform/node.js';

export { canonicalJson, describeUfunc, descriptorHash, ufuncFromDescriptor, validateDescriptor, DESCRIPTOR_FORMAT, DEFAULT_DESCRIPTOR_LIMITS } from './descriptor.js';
export type { DescriptorLimits, DescriptorOptions, EnvEntry, UfuncDescriptor } from './descriptor.js';
export { startWorker } from './worker.js';
export type { ClusterWorker, JobEvent, WorkerOptions } from './worker.js';
export type { ChunkTimes } from '../zarr/run-chunk.js';
export type { ClusterOptions } from './client.js';
export type { RedisConnection } from './jobs.js';
export { ChunkError, ClusterError, DescriptorError } from './errors.js';
