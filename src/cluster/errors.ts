/**
 * The errors of running ufuncs over chunked arrays and on a cluster. Each is a `UfuncError`, so one
 * `catch` still sees every error of the library.
 */
import { UfuncError } from '../errors.js';

/**
 * A ufunc descriptor (src/cluster/descriptor.ts) is malformed, too large, or describes something
 * that cannot travel (a closure in `env`, a ufunc not made by this library).
 */
export class DescriptorError extends UfuncError {}

/**
 * A chunked call cannot run as asked: the arrays' shapes or chunks do not fit the ufunc's layout
 * (a chunk that splits a core dimension, outputs chunked differently), or a chunk reference names a
 * path outside the store or a chunk outside the array.
 */
export class ChunkError extends UfuncError {}

/**
 * A chunked call on a cluster failed: a chunk's kernel threw on a worker (the message names the
 * chunk and the worker), a job could not be placed on the queue, or the workers gave up on a chunk.
 */
export class ClusterError extends UfuncError {
  constructor(
    message: string,
    /** The failed chunks, as grid coordinates of the output, with the worker that ran each. */
    readonly chunks: readonly { readonly chunk: readonly number[]; readonly worker?: string; readonly reason: string }[] = [],
  ) {
    super(message);
  }
}
