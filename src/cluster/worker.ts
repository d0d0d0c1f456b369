/**
 * A cluster worker: takes chunk jobs from a BullMQ queue and runs them on this machine's target,
 * over the Zarr store at its root. `ufunc worker` (src/cli.ts) starts one.
 *
 * What a job can make a worker do is narrow by construction: the ufunc comes from a descriptor that
 * is validated, size-limited, checked against its hash and compiled by the kernel compiler (never
 * evaluated as JavaScript); arrays are opened by checked paths below the store's root; chunks are
 * grid coordinates checked against the grid the worker derives from the store. A job that fails
 * those checks, or whose kernel throws, fails at once without retries (the error names the chunk
 * and the worker); an I/O error is retried by BullMQ.
 */
import { stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import { Redis, type RedisOptions as RedisClientOptions } from 'ioredis';
import type { Ufunc } from '../callable.js';
import { TargetUnavailableError, UfuncError } from '../errors.js';
import { jitDisabledByEnvironment } from '../ufunc.js';
import { openZarr, type ZarrArray } from '../zarr/arrays.js';
import { checkChunkCoords } from '../zarr/chunk-grid.js';
import { type ChunkedCall, type ChunkTimes, gridOf, runChunk } from '../zarr/run-chunk.js';
import { storeAt } from '../zarr/arrays.js';
import { checkStorePath } from '../zarr/store.js';
import { DEFAULT_DESCRIPTOR_LIMITS, type DescriptorLimits, descriptorHash, ufuncFromDescriptor, validateDescriptor } from './descriptor.js';
import { DescriptorError } from './errors.js';
import { type ChunkJob, DEFAULT_QUEUE, decodeScalar, descriptorKey, type JobOperand, type RedisConnection, redisOptions, validateJob, whenReachable } from './jobs.js';

export interface WorkerOptions extends RedisConnection {
  /** The Zarr store's root directory: every array a job names is below it. */
  readonly store: string;
  /** The queue to take jobs from. @default 'ufunc' */
  readonly queue?: string;
  /** Where kernels run: 'cpu', 'parallel', 'gpu'. @default 'parallel' */
  readonly target?: string;
  /**
   * Jobs run at once by this worker: with 2, one job's reading and writing can overlap the other's
   * kernel (where the kernel is long against the I/O); memory holds this many jobs' chunks. One
   * is the default: with 8 MiB chunks of a memory-bound kernel, 2 made each chunk several times
   * slower on a 2-core machine (bench/cluster-overhead.ts). @default 1
   */
  readonly concurrency?: number;
  /**
   * How long a job's lock lasts without renewal, in ms: a worker that dies is seen after about this
   * long, and its job goes to another worker. @default 30000
   */
  readonly lockDuration?: number;
  readonly limits?: DescriptorLimits;
  /** Called when a job ends, for logs and progress. */
  readonly onJob?: (event: JobEvent) => void;
}

/** A job's end, as a worker's `onJob` hears of it. */
export interface JobEvent {
  readonly id: string;
  readonly chunks: number;
  /** From taking the job to its end (validation, descriptor, opening arrays, the chunks). */
  readonly ms: number;
  /** Where the chunks' time went (absent when the job failed before its first chunk). */
  readonly times?: ChunkTimes;
  readonly error?: string;
}

/** A running worker. */
export interface ClusterWorker {
  /** This worker's name in error messages: `host:pid`. */
  readonly name: string;
  /** Stops taking jobs, lets the running ones finish, and disconnects. */
  close(): Promise<void>;
}

/** Arrays opened by recent jobs, by path, with the modification time of the metadata they were opened from. */
const opened = new Map<string, { readonly mtimeMs: number; readonly array: Promise<ZarrArray> }>();

/**
 * `openZarr`, reusing the handle of an earlier job while the array's metadata file is unchanged
 * (a `stat` instead of reading and parsing it for every job).
 */
async function openCached(root: string, path: string): Promise<ZarrArray> {
  const key = `${root}\0${path}`;
  const mtimeMs = await stat(join(root, ...checkStorePath(path).split('/'), 'zarr.json')).then((s) => s.mtimeMs, () => -1);
  const hit = opened.get(key);
  if (hit && hit.mtimeMs === mtimeMs && mtimeMs >= 0) return hit.array;
  const array = openZarr(root, path);
  if (opened.size >= 256) opened.delete(opened.keys().next().value!);
  opened.set(key, { mtimeMs, array });
  array.catch(() => opened.delete(key));
  return array;
}

/** How many compiled descriptors a worker keeps. */
const CACHED_UFUNCS = 64;

/**
 * Starts a worker.
 *
 * @throws DescriptorError where plain-JavaScript execution (`UFUNC_DISABLE_JIT`) is switched on:
 *   a worker runs only what the kernel compiler accepts
 */
export async function startWorker(options: WorkerOptions): Promise<ClusterWorker> {
  if (jitDisabledByEnvironment()) {
    throw new DescriptorError('A cluster worker runs only kernels the kernel compiler accepts; UFUNC_DISABLE_JIT (plain-JavaScript execution of kernels) is refused in workers. Unset it.');
  }
  const name = `${hostname()}:${process.pid}`;
  const queueName = options.queue ?? DEFAULT_QUEUE;
  const target = options.target ?? 'parallel';
  const limits = options.limits ?? DEFAULT_DESCRIPTOR_LIMITS;
  const root = storeAt(options.store).root;
  const connection = redisOptions(options);
  const redis = new Redis(connection as RedisClientOptions);
  let lastError: string | undefined;
  const noteError = (e: Error): void => void (lastError = e.message);
  redis.on('error', noteError); // reconnects by itself; jobs report what fails
  const ufuncs = new Map<string, Ufunc>();

  const ufuncFor = async (hash: string): Promise<Ufunc> => {
    const cached = ufuncs.get(hash);
    if (cached) return cached;
    const key = descriptorKey(queueName, hash);
    const size = await redis.strlen(key);
    if (size === 0) throw new Error(`the descriptor ${hash.slice(0, 12)}… is not in Redis (yet)`); // retried: the caller puts it back
    if (size > limits.maxBytes) throw new DescriptorError(`The descriptor ${hash.slice(0, 12)}… is ${size} bytes; at most ${limits.maxBytes} are accepted.`);
    const text = await redis.get(key);
    if (text === null) throw new Error(`the descriptor ${hash.slice(0, 12)}… is not in Redis (yet)`);
    const descriptor = validateDescriptor(text, limits);
    if (descriptorHash(descriptor) !== hash) throw new DescriptorError(`The descriptor stored under ${hash.slice(0, 12)}… does not have that hash.`);
    const ufunc = ufuncFromDescriptor(descriptor, target) as Ufunc;
    if (ufuncs.size >= CACHED_UFUNCS) ufuncs.delete(ufuncs.keys().next().value!);
    ufuncs.set(hash, ufunc);
    return ufunc;
  };

  const process_ = async (job: Job<unknown>): Promise<{ worker: string; chunks: number }> => {
    const started = performance.now();
    let data: ChunkJob | undefined;
    try {
      data = validateJob(job.data);
      const ufunc = await ufuncFor(data.descriptor);
      const open = (path: string): Promise<ZarrArray> => openCached(root, path);
      const operand = (o: JobOperand) => ('array' in o ? open(o.array) : Promise.resolve(decodeScalar(o.scalar)));
      const call: ChunkedCall = {
        ufunc,
        inputs: await Promise.all(data.inputs.map(operand)),
        outputs: await Promise.all(data.outputs.map(open)),
        ...(data.where && { where: (await operand(data.where)) as ZarrArray | boolean }),
      };
      const grid = gridOf(call);
      const chunks = data.chunks.map((c) => checkChunkCoords(grid, c));
      const times: ChunkTimes = { readMs: 0, kernelMs: 0, writeMs: 0 };
      for (const coords of chunks) {
        try {
          await runChunk(call, grid, coords, times);
        } catch (e) {
          throw Object.assign(e as Error, { chunk: coords });
        }
      }
      options.onJob?.({ id: job.id ?? '', chunks: chunks.length, ms: performance.now() - started, times });
      return { worker: name, chunks: chunks.length };
    } catch (e) {
      const err = e as Error & { chunk?: readonly number[] };
      const where = err.chunk ? `chunk [${err.chunk.join(', ')}]` : data ? `chunks ${data.chunks.map((c) => `[${c.join(', ')}]`).slice(0, 4).join(', ')}${data.chunks.length > 4 ? ', …' : ''}` : 'a malformed job';
      const message = `worker ${name}: ${where}: ${err.name}: ${err.message}`;
      options.onJob?.({ id: job.id ?? '', chunks: data?.chunks.length ?? 0, ms: performance.now() - started, error: message });
      // The library's errors say the job itself is wrong (bad descriptor, bad chunk, a kernel that
      // throws): running it again gives the same. Others (I/O, Redis) may pass: BullMQ retries them.
      if (e instanceof UfuncError && !(e instanceof TargetUnavailableError)) throw new UnrecoverableError(message);
      throw new Error(message);
    }
  };

  const worker = new Worker(queueName, process_, {
    connection,
    concurrency: options.concurrency ?? 1,
    lockDuration: options.lockDuration ?? 30_000,
    stalledInterval: Math.max(1000, Math.floor((options.lockDuration ?? 30_000) / 2)),
    maxStalledCount: 3,
  });
  // A worker reports errors through its jobs; a lost connection is retried by ioredis.
  worker.on('error', noteError);
  try {
    await whenReachable(Promise.all([worker.waitUntilReady(), redis.ping()]), options.url, () => lastError);
  } catch (e) {
    await worker.close(true).catch(() => undefined);
    redis.disconnect();
    throw e;
  }
  return {
    name,
    async close() {
      await worker.close();
      redis.disconnect();
    },
  };
}
