/**
 * The calling side of a chunked call on a cluster: puts the ufunc's descriptor in Redis, one job per
 * group of output chunks on a BullMQ queue, and resolves when every chunk is written.
 *
 * Jobs are identified by the call and their first chunk, so adding one twice adds it once. The
 * caller listens to the queue's events for its jobs and, after a second without news of them, asks
 * Redis for the state of those it has not heard of: a job lost with a Redis restart (no persistence) is added again, and
 * an event missed while the connection was down is made up for. A worker that dies mid-job leaves
 * its job locked until BullMQ's stalled-job check hands it to another worker; output chunks are
 * written atomically and deterministically, so a job run twice writes the same bytes.
 */
import { randomUUID } from 'node:crypto';
import { type Job, Queue, QueueEvents } from 'bullmq';
import { Redis, type RedisOptions as RedisClientOptions } from 'ioredis';
import { ChunkError, ClusterError } from './errors.js';
import { canonicalJson, describeUfunc, descriptorHash } from './descriptor.js';
import { type ChunkJob, DEFAULT_QUEUE, descriptorKey, encodeScalar, type JobOperand, MAX_CHUNKS_PER_JOB, type RedisConnection, redisOptions, whenReachable } from './jobs.js';
import type { ChunkedCall } from '../zarr/run-chunk.js';
import { isZarrArray } from '../zarr/run-chunk.js';
import { storeAt } from '../zarr/arrays.js';
import { chunkCoords, type ChunkGrid } from '../zarr/chunk-grid.js';

/** Where and how a chunked call runs on a cluster. */
export interface ClusterOptions extends RedisConnection {
  /** The BullMQ queue the workers take jobs from (`ufunc worker --queue`). @default 'ufunc' */
  readonly queue?: string;
  /** Output chunks per job: more amortise the queue's overhead, fewer balance the load. @default 1 */
  readonly chunksPerJob?: number;
  /** Tries per job before the call fails (a worker's death or an I/O error is retried). @default 5 */
  readonly attempts?: number;
  /** How long to wait for Redis at the start of the call, in ms. @default 10000 */
  readonly connectTimeoutMs?: number;
}

/**
 * After how long without news of its jobs the caller asks Redis about those it has not heard of, in
 * ms. While events arrive, nothing is asked: a call of thousands of jobs does not fetch them all
 * every second beside the workers.
 */
const RECONCILE_MS = 1000;

export async function runOnCluster(call: ChunkedCall, grid: ChunkGrid, options: ClusterOptions, onProgress?: (done: number, total: number) => void): Promise<void> {
  const queueName = options.queue ?? DEFAULT_QUEUE;
  const perJob = options.chunksPerJob ?? 1;
  const attempts = options.attempts ?? 5;
  if (!Number.isInteger(perJob) || perJob < 1 || perJob > MAX_CHUNKS_PER_JOB) throw new ChunkError(`\`chunksPerJob\` must be an integer from 1 to ${MAX_CHUNKS_PER_JOB}, found ${String(perJob)}.`);
  const descriptor = describeUfunc(call.ufunc);
  const hash = descriptorHash(descriptor);
  const descriptorText = canonicalJson(descriptor);
  const roots = new Set([...call.inputs, ...call.outputs, ...(call.where !== undefined ? [call.where] : [])].filter(isZarrArray).map((a) => a.root));
  if (roots.size > 1) throw new ChunkError(`On a cluster every Zarr array of a call must be in one store (workers open one store root); found ${[...roots].join(', ')}.`);
  const operand = (x: ChunkedCall['inputs'][number]): JobOperand => (isZarrArray(x) ? { array: x.path } : { scalar: encodeScalar(x) });
  const base: Omit<ChunkJob, 'chunks'> = {
    v: 1,
    descriptor: hash,
    inputs: call.inputs.map(operand),
    outputs: call.outputs.map((o) => o.path),
    ...(call.where !== undefined && call.where !== true && { where: operand(call.where) }),
  };
  const callId = randomUUID();
  const jobs = new Map<string, ChunkJob>();
  for (let first = 0; first < grid.count; first += perJob) {
    const chunks: number[][] = [];
    for (let i = first; i < Math.min(first + perJob, grid.count); i++) chunks.push(chunkCoords(grid, i));
    jobs.set(`${callId}-${first}`, { ...base, chunks });
  }

  const connection = redisOptions(options);
  const queue = new Queue(queueName, { connection });
  const redis = new Redis(connection as RedisClientOptions);
  // While Redis is away, commands wait for the reconnect; the errors are only news of that.
  const events = new QueueEvents(queueName, { connection });
  // While Redis is away, commands wait for the reconnect; the errors are news of that, kept for a message.
  let lastError: string | undefined;
  const noteError = (e: Error): void => void (lastError = e.message);
  queue.on('error', noteError);
  events.on('error', noteError);
  redis.on('error', noteError);
  const pending = new Set(jobs.keys());
  let chunksDone = 0;
  let settle!: (error?: Error) => void;
  const finished = new Promise<void>((resolve, reject) => {
    settle = (error) => (error ? reject(error) : resolve());
  });
  let lastNews = performance.now();
  const complete = (id: string): void => {
    if (!pending.delete(id)) return;
    lastNews = performance.now();
    chunksDone += jobs.get(id)!.chunks.length;
    onProgress?.(chunksDone, grid.count);
    if (pending.size === 0) settle();
  };
  const fail = (id: string, reason: string): void => {
    if (!pending.has(id)) return;
    const job = jobs.get(id)!;
    const worker = /^worker ([^:]+):/.exec(reason)?.[1];
    settle(new ClusterError(`A chunk job failed on the cluster: ${reason}`, job.chunks.map((chunk) => ({ chunk, reason, ...(worker && { worker }) }))));
  };
  const onCompleted = ({ jobId }: { jobId: string }): void => complete(jobId);
  const onFailed = ({ jobId, failedReason }: { jobId: string; failedReason: string }): void => {
    // An event for a try that will be retried is not the job's end: reconcile() asks for its state.
    if (pending.has(jobId)) void queue.getJob(jobId).then((job) => job && judge(job, jobId, failedReason)).catch(() => undefined);
  };
  const judge = async (job: Job, id: string, reason?: string): Promise<void> => {
    const state = await job.getState();
    if (state === 'completed') complete(id);
    else if (state === 'failed') fail(id, reason ?? job.failedReason);
  };
  events.on('completed', onCompleted);
  events.on('failed', onFailed);

  const add = async (ids: readonly string[]): Promise<void> => {
    await redis.set(descriptorKey(queueName, hash), descriptorText, 'NX');
    await queue.addBulk(ids.map((id) => ({
      name: 'chunks',
      data: jobs.get(id)!,
      opts: { jobId: id, attempts, backoff: { type: 'exponential', delay: 250 }, removeOnComplete: { age: 3600 }, removeOnFail: { age: 24 * 3600 } },
    })));
  };
  const reconcile = async (): Promise<void> => {
    const ids = [...pending];
    const missing: string[] = [];
    for (let i = 0; i < ids.length; i += 256) {
      const batch = ids.slice(i, i + 256);
      const found = await Promise.all(batch.map((id) => queue.getJob(id)));
      await Promise.all(found.map((job, k) => (job ? judge(job, batch[k]!) : (missing.push(batch[k]!), undefined))));
    }
    // Jobs Redis lost (a restart without persistence) go on again; their chunks may be written twice, with the same bytes.
    if (missing.length > 0 && pending.size > 0) await add(missing.filter((id) => pending.has(id)));
  };
  let timer: NodeJS.Timeout | undefined;
  let connected = false;
  // The last time the jobs' states were asked for: a reconcile waits a second after the last event
  // *and* after the last reconcile — while long jobs send no events, asking again at once would
  // read every pending job's state back to back (thousands of Redis commands per chunk).
  let lastReconcile = performance.now();
  const loop = (): void => {
    const quiet = (): number => performance.now() - Math.max(lastNews, lastReconcile);
    timer = setTimeout(() => {
      if (quiet() < RECONCILE_MS) return loop();
      reconcile().catch(() => undefined).finally(() => {
        lastReconcile = performance.now();
        if (pending.size > 0) loop();
      });
    }, Math.max(10, RECONCILE_MS - quiet()));
  };
  try {
    await whenReachable(Promise.all([events.waitUntilReady(), redis.ping()]), options.url, () => lastError, options.connectTimeoutMs);
    connected = true;
    await add([...jobs.keys()]);
    loop();
    await finished;
    // A worker killed between writing a chunk's temporary file and renaming it left that file
    // behind; every chunk is written now, so no write can still be in flight there.
    await Promise.all(call.outputs.map((o) => storeAt(o.root).removeUnfinishedWrites(`${o.path}/c`)));
  } finally {
    clearTimeout(timer);
    if (pending.size > 0 && connected) {
      // The call failed: take its jobs that no worker has started off the queue (while Redis answers).
      const removed = Promise.all([...pending].map((id) => queue.remove(id).catch(() => 0))).catch(() => undefined);
      await Promise.race([removed, new Promise((r) => setTimeout(r, 2000).unref())]);
    }
    // Closing waits for commands in flight; against a Redis that went away it would wait for ever.
    const closed = Promise.all([events.close(), queue.close()]).catch(() => undefined);
    await Promise.race([closed, new Promise((r) => setTimeout(r, 2000).unref())]);
    redis.disconnect();
    void (events as unknown as { disconnect?: () => Promise<void> }).disconnect?.().catch(() => undefined);
    void queue.disconnect().catch(() => undefined);
  }
}
