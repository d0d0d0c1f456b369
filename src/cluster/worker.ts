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
import { ArgumentError } from '../errors.js';
import { jitDisabledByEnvironment } from '../ufunc.js';
import { openZarr, type ZarrArray } from '../zarr/arrays.js';
import { checkChunkCoords, type ChunkGrid } from '../zarr/chunk-grid.js';
import { type ChunkedCall, type ChunkTimes, gridOf, type KernelCall, runChunk, type RunChunkOptions } from '../zarr/run-chunk.js';
import { storeAt } from '../zarr/arrays.js';
import { ChunkBuffers } from '../zarr/chunk-buffers.js';
import { checkStorePath } from '../zarr/store.js';
import { DEFAULT_DESCRIPTOR_LIMITS, type DescriptorLimits, descriptorHash, type UfuncDescriptor, ufuncFromDescriptor, validateDescriptor } from './descriptor.js';
import { DescriptorError } from './errors.js';
import { isJobError, KernelThread } from './kernel-thread.js';
import { type ChunkJob, DEFAULT_QUEUE, decodeScalar, descriptorKey, type JobOperand, type RedisConnection, redisOptions, validateJob, whenReachable } from './jobs.js';

export interface WorkerOptions extends RedisConnection {
  /** The Zarr store's root directory: every array a job names is below it. */
  readonly store: string;
  /** The queue to take jobs from. @default 'ufunc' */
  readonly queue?: string;
  /** Where kernels run: 'cpu', 'parallel', 'gpu'. @default 'parallel' */
  readonly target?: string;
  /**
   * Chunks this worker holds at once, over its jobs (and jobs taken at once): while one chunk's
   * kernel runs, the next ones are read and the last ones written. Kernels run one at a time —
   * on the cpu target on the worker's kernel thread (kernel-thread.ts), so the reads and writes
   * never wait for them — and memory holds this many chunks of every operand. With 1, a worker
   * reads, computes and writes each chunk in turn, and takes its next job after. @default 3
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
 * Chunks in flight by default: one in the kernel, one read and one written at the same time. With
 * 8 MiB chunks of a memory-bound kernel, where the three take about as long, one worker's time per
 * chunk beyond the kernel is about 2 ms with 3, 3 ms with 2 and 13 ms with 1 on a 16-core host
 * (bench/results/cluster-overhead-intel-xeon-16c.md). The cost: at the end of a call a worker may
 * hold two jobs waiting for its kernel while another has none left.
 */
const DEFAULT_CONCURRENCY = 3;

/** At most `n` holders at once; the others wait in the order they came. */
function slots(n: number): { take(): Promise<void>; give(): void } {
  let free = n;
  const waiting: (() => void)[] = [];
  return {
    async take() {
      if (free > 0) free--;
      else await new Promise<void>((resolve) => waiting.push(resolve));
    },
    give() {
      const next = waiting.shift();
      if (next) next();
      else free++;
    },
  };
}

/**
 * Starts a worker.
 *
 * @throws DescriptorError where plain-JavaScript execution (`UFUNC_DISABLE_JIT`) is switched on:
 *   a worker runs only what the kernel compiler accepts; ArgumentError for a `concurrency` that is
 *   not a positive integer
 */
export async function startWorker(options: WorkerOptions): Promise<ClusterWorker> {
  if (jitDisabledByEnvironment()) {
    throw new DescriptorError('A cluster worker runs only kernels the kernel compiler accepts; UFUNC_DISABLE_JIT (plain-JavaScript execution of kernels) is refused in workers. Unset it.');
  }
  const name = `${hostname()}:${process.pid}`;
  const queueName = options.queue ?? DEFAULT_QUEUE;
  const target = options.target ?? 'parallel';
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new ArgumentError(`A worker's \`concurrency\` (chunks held at once) must be a positive integer, found ${String(concurrency)}.`);
  const limits = options.limits ?? DEFAULT_DESCRIPTOR_LIMITS;
  const root = storeAt(options.store).root;
  const connection = redisOptions(options);
  const redis = new Redis(connection as RedisClientOptions);
  let lastError: string | undefined;
  const noteError = (e: Error): void => void (lastError = e.message);
  redis.on('error', noteError); // reconnects by itself; jobs report what fails
  const ufuncs = new Map<string, { readonly ufunc: Ufunc; readonly descriptor: UfuncDescriptor }>();
  // The cpu target computes on the calling thread: here, on the kernel thread. The other targets'
  // calls leave this thread free already (the parallel target's pool, the GPU).
  const kernelThread = target === 'cpu' ? new KernelThread(target) : undefined;
  const chunkSlots = slots(concurrency);
  // The kernel thread's chunks lie in shared memory, used again from chunk to chunk (chunk-buffers.ts).
  const buffers = kernelThread ? new ChunkBuffers() : undefined;

  const ufuncFor = async (hash: string): Promise<{ readonly ufunc: Ufunc; readonly descriptor: UfuncDescriptor }> => {
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
    const entry = { ufunc: ufuncFromDescriptor(descriptor, target) as Ufunc, descriptor };
    if (ufuncs.size >= CACHED_UFUNCS) ufuncs.delete(ufuncs.keys().next().value!);
    ufuncs.set(hash, entry);
    return entry;
  };

  /**
   * Runs a job's chunks, up to `concurrency` at once over every job of this worker: each holds a
   * slot from before its read to after its write. The first chunk that fails fails the job (no
   * chunk starts after it; those under way finish, writing what they would have written anyway).
   */
  const runChunks = async (call: ChunkedCall, grid: ChunkGrid, chunks: readonly (readonly number[])[], run: RunChunkOptions): Promise<void> => {
    let next = 0;
    let failed = false;
    const lane = async (): Promise<void> => {
      while (next < chunks.length && !failed) {
        const coords = chunks[next++]!;
        await chunkSlots.take();
        try {
          if (!failed) await runChunk(call, grid, coords, run);
        } catch (e) {
          failed = true;
          throw Object.assign(e as Error, { chunk: coords });
        } finally {
          chunkSlots.give();
        }
      }
    };
    const lanes = await Promise.allSettled(Array.from({ length: Math.min(concurrency, chunks.length) }, lane));
    const failure = lanes.find((l) => l.status === 'rejected');
    if (failure) throw failure.reason;
  };

  const process_ = async (job: Job<unknown>): Promise<{ worker: string; chunks: number }> => {
    const started = performance.now();
    let data: ChunkJob | undefined;
    try {
      data = validateJob(job.data);
      const hash = data.descriptor;
      const { ufunc, descriptor } = await ufuncFor(hash);
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
      const kernel: KernelCall | undefined = kernelThread && ((_, args, kernelOptions) => kernelThread.run(hash, descriptor, args, kernelOptions));
      await runChunks(call, grid, chunks, { times, ...(kernel && { kernel, shared: true, buffers }) });
      options.onJob?.({ id: job.id ?? '', chunks: chunks.length, ms: performance.now() - started, times });
      return { worker: name, chunks: chunks.length };
    } catch (e) {
      const err = e as Error & { chunk?: readonly number[] };
      const where = err.chunk ? `chunk [${err.chunk.join(', ')}]` : data ? `chunks ${data.chunks.map((c) => `[${c.join(', ')}]`).slice(0, 4).join(', ')}${data.chunks.length > 4 ? ', …' : ''}` : 'a malformed job';
      const message = `worker ${name}: ${where}: ${err.name}: ${err.message}`;
      options.onJob?.({ id: job.id ?? '', chunks: data?.chunks.length ?? 0, ms: performance.now() - started, error: message });
      // The library's errors say the job itself is wrong (bad descriptor, bad chunk, a kernel that
      // throws): running it again gives the same. Others (I/O, Redis) may pass: BullMQ retries them.
      if (isJobError(e)) throw new UnrecoverableError(message);
      throw new Error(message);
    }
  };

  const worker = new Worker(queueName, process_, {
    connection,
    concurrency,
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
    await kernelThread?.close();
    redis.disconnect();
    throw e;
  }
  return {
    name,
    async close() {
      await worker.close();
      await kernelThread?.close();
      redis.disconnect();
    },
  };
}
