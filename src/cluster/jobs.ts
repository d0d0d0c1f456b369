/**
 * What travels on the queue between the calling process and the workers: the names of the queue
 * and the Redis keys, a chunk job's data and its validation, the connection options.
 *
 * A job names its arrays by their paths inside the store (every worker opens the same store at its
 * own `--store` root), the ufunc by the hash of its descriptor (kept once in Redis), and its chunks
 * by their grid coordinates; a worker re-derives shapes and the grid from the store itself, so a
 * job cannot make it read or write anything but whole chunks of arrays inside its store.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import type { RedisOptions } from 'bullmq';
import { checkStorePath } from '../zarr/store.js';
import { ChunkError, ClusterError } from './errors.js';

/** The queue's default name. */
export const DEFAULT_QUEUE = 'ufunc';

/** The Redis key of a descriptor, by its hash. */
export function descriptorKey(queue: string, hash: string): string {
  return `${queue}:descriptor:${hash}`;
}

/** A scalar input as it travels (JSON has no bigint, NaN or −0). */
export type ScalarEntry = { readonly number: number | 'NaN' | 'Infinity' | '-Infinity' | '-0' } | { readonly bigint: string } | { readonly boolean: boolean };

/** An operand of a chunk job: an array of the store, or a scalar. */
export type JobOperand = { readonly array: string } | { readonly scalar: ScalarEntry };

export interface ChunkJob {
  /** The job format's version. */
  readonly v: 1;
  /** The SHA-256 of the ufunc's descriptor (src/cluster/descriptor.ts). */
  readonly descriptor: string;
  readonly inputs: readonly JobOperand[];
  readonly outputs: readonly string[];
  /** `where`: an array of the store, or a boolean; absent means true. */
  readonly where?: JobOperand;
  /** The output chunks this job computes, as grid coordinates. */
  readonly chunks: readonly (readonly number[])[];
}

/** At most this many chunks in one job (a job is one unit of retry). */
export const MAX_CHUNKS_PER_JOB = 4096;

export function encodeScalar(x: number | bigint | boolean): ScalarEntry {
  if (typeof x === 'bigint') return { bigint: x.toString() };
  if (typeof x === 'boolean') return { boolean: x };
  return { number: Number.isNaN(x) ? 'NaN' : x === Infinity ? 'Infinity' : x === -Infinity ? '-Infinity' : Object.is(x, -0) ? '-0' : x };
}

export function decodeScalar(e: ScalarEntry): number | bigint | boolean {
  if ('bigint' in e) return BigInt(e.bigint);
  if ('boolean' in e) return e.boolean;
  const v = e.number;
  return v === 'NaN' ? NaN : v === 'Infinity' ? Infinity : v === '-Infinity' ? -Infinity : v === '-0' ? -0 : v;
}

/**
 * Checks a job's data as it came off the queue and returns it typed.
 *
 * @throws ChunkError naming the first field that is wrong
 */
export function validateJob(data: unknown): ChunkJob {
  const fail = (what: string): never => {
    throw new ChunkError(`A chunk job is malformed: ${what}.`);
  };
  if (data === null || typeof data !== 'object' || Array.isArray(data)) fail('its data is not an object');
  const d = data as Record<string, unknown>;
  const extra = Object.keys(d).find((k) => !['v', 'descriptor', 'inputs', 'outputs', 'where', 'chunks'].includes(k));
  if (extra !== undefined) fail(`it has an unknown field '${extra.slice(0, 40)}'`);
  if (d.v !== 1) fail(`its format version is ${JSON.stringify(d.v)}, not 1`);
  if (typeof d.descriptor !== 'string' || !/^[0-9a-f]{64}$/.test(d.descriptor)) fail('`descriptor` is not a SHA-256 hash in hex');
  const operand = (x: unknown, where: string): JobOperand => {
    if (x === null || typeof x !== 'object' || Array.isArray(x)) return fail(`${where} is not an object`);
    const o = x as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1 && keys[0] === 'array' && typeof o.array === 'string') return { array: checkStorePath(o.array, `path of ${where}`) };
    if (keys.length === 1 && keys[0] === 'scalar' && o.scalar !== null && typeof o.scalar === 'object') {
      const s = o.scalar as Record<string, unknown>;
      const k = Object.keys(s);
      if (k.length === 1) {
        if (k[0] === 'number' && ((typeof s.number === 'number' && Number.isFinite(s.number)) || ['NaN', 'Infinity', '-Infinity', '-0'].includes(s.number as string))) return { scalar: s as ScalarEntry };
        if (k[0] === 'bigint' && typeof s.bigint === 'string' && /^-?\d{1,20}$/.test(s.bigint)) return { scalar: s as ScalarEntry };
        if (k[0] === 'boolean' && typeof s.boolean === 'boolean') return { scalar: s as ScalarEntry };
      }
    }
    return fail(`${where} is neither { array: path } nor { scalar: value }`);
  };
  if (!Array.isArray(d.inputs) || d.inputs.length > 64) fail('`inputs` is not an array of at most 64 operands');
  if (!Array.isArray(d.outputs) || d.outputs.length < 1 || d.outputs.length > 64 || !d.outputs.every((p) => typeof p === 'string')) fail('`outputs` is not an array of 1 to 64 paths');
  if (!Array.isArray(d.chunks) || d.chunks.length < 1 || d.chunks.length > MAX_CHUNKS_PER_JOB) fail(`\`chunks\` is not an array of 1 to ${MAX_CHUNKS_PER_JOB} chunk coordinates`);
  for (const c of d.chunks as unknown[]) {
    if (!Array.isArray(c) || c.length > 32 || !c.every((x) => Number.isSafeInteger(x) && x >= 0)) fail('a chunk is not a list of non-negative integers');
  }
  return {
    v: 1,
    descriptor: d.descriptor as string,
    inputs: (d.inputs as unknown[]).map((x, i) => operand(x, `input ${i + 1}`)),
    outputs: (d.outputs as string[]).map((p, k) => checkStorePath(p, `path of output ${k + 1}`)),
    ...(d.where !== undefined && { where: operand(d.where, '`where`') }),
    chunks: d.chunks as number[][],
  };
}

/** How to reach Redis: a URL (`redis://user:password@host:6379/0`, `rediss://…` for TLS) and options. */
export interface RedisConnection {
  /** `redis://[user[:password]@]host[:port][/db]`, or `rediss://…` for TLS. */
  readonly url: string;
  /** For TLS: a PEM file of the certificate authority to trust (e.g. a self-signed server's). */
  readonly tlsCaFile?: string;
}

/** Options for a Redis connection BullMQ (and ioredis) can use: commands wait for a reconnect rather than fail. */
export function redisOptions(c: RedisConnection): RedisOptions {
  const url = new URL(c.url);
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new ChunkError(`The Redis URL must start with redis:// or rediss:// (TLS), found '${url.protocol}//'.`);
  const db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0;
  return {
    host: url.hostname,
    port: url.port ? Number(url.port) : 6379,
    ...(url.username && { username: decodeURIComponent(url.username) }),
    ...(url.password && { password: decodeURIComponent(url.password) }),
    db,
    // A server name must be a host name (RFC 6066): an IP address is checked against the certificate without one.
    ...(url.protocol === 'rediss:' && { tls: { ...(!isIP(url.hostname) && { servername: url.hostname }), ...(c.tlsCaFile && { ca: readFileSync(c.tlsCaFile) }) } }),
    maxRetriesPerRequest: null,
  };
}

/** How long a caller or a worker waits for Redis at the start before it gives up, in ms. */
export const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Waits for `ready` (a connection's first contact with Redis); rejects with a ClusterError saying
 * where and the last error seen (wrong password, refused connection, TLS failure) after `ms`, rather
 * than waiting for ever as a reconnecting client would.
 */
export async function whenReachable<T>(ready: Promise<T>, url: string, lastError: () => string | undefined, ms = CONNECT_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const where = new URL(url);
  where.password = where.password ? '***' : '';
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new ClusterError(`Redis at ${where.href} did not answer within ${ms / 1000} s${lastError() ? `: ${lastError()}` : ''}.`));
    }, ms);
  });
  try {
    return await Promise.race([
      ready.catch((e: unknown) => {
        throw new ClusterError(`Redis at ${where.href} refused the connection: ${(e as Error).message}.`);
      }),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
