/**
 * Chunked calls on a cluster: a real redis-server on 127.0.0.1 and `ufunc worker` processes on this
 * machine. The result is byte-identical to a run in one process — also when a worker is killed
 * mid-run and when Redis restarts mid-run (losing every job) — kernel errors name the chunk and the
 * worker, and hostile jobs are refused while the workers keep serving.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import * as zarr from 'zarrita';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guvectorize, vectorize } from '../../src/api.js';
import { canonicalJson, ClusterError, describeUfunc } from '../../src/cluster/index.js';
import { createZarr, mapChunks, openZarr, type ZarrArray } from '../../src/zarr/index.js';
import { redisAvailable, type RedisServer, startRedis } from './redis-server.js';

const repo = path.resolve(import.meta.dirname, '../..');
const cli = path.join(repo, 'src/cli.ts');
const hasRedis = redisAvailable();

/** A compute-bound kernel (a few ms a chunk), so a run lasts long enough to be interrupted. */
const heavy = vectorize(['float32(float32)'])((x) => {
  let s = x;
  for (let k = 0; k < 300; k++) s = Math.fround(Math.sqrt(s * s + 1) - 0.999);
  return s;
});

function startWorker(url: string, store: string, queue: string, extra: string[] = []): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', cli, 'worker', '--redis', url, '--store', store, '--queue', queue, '--target', 'cpu', '--lock-ms', '1500', ...extra], {
    cwd: repo, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, UFUNC_DISABLE_JIT: '' },
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  return Object.assign(child, { output: () => output });
}

async function waitFor(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function input(root: string, name: string, n: number, chunk: number): Promise<ZarrArray> {
  const a = await createZarr(root, name, { shape: [n], chunkShape: [chunk], dtype: 'float32' });
  await zarr.set(a.array as never, null, { data: Float32Array.from({ length: n }, (_, i) => (i % 1000) / 10), shape: [n], stride: [1] } as never);
  return a;
}

/** Every chunk file of an array, by name: equal maps mean byte-identical arrays. */
function chunkFiles(root: string, name: string): Map<string, string> {
  const dir = path.join(root, name, 'c');
  return new Map(readdirSync(dir).map((f) => [f, readFileSync(path.join(dir, f)).toString('base64')]));
}

describe.skipIf(!hasRedis)('a cluster of workers over Redis', () => {
  let redis: RedisServer;
  let root: string;
  const queue = `q${process.pid}`;
  const workers: ReturnType<typeof startWorker>[] = [];
  const password = 'a-secret';

  beforeAll(async () => {
    redis = await startRedis(['--requirepass', password], { url: (port) => `redis://:${password}@127.0.0.1:${port}` });
    root = mkdtempSync(path.join(tmpdir(), 'ufunc-cluster-'));
    for (let i = 0; i < 3; i++) workers.push(startWorker(redis.url, root, queue));
    await waitFor(() => workers.every((w) => w.output().includes('ufunc worker')), 60_000, 'the workers to start');
  }, 90_000);

  afterAll(async () => {
    for (const w of workers) w.kill('SIGKILL');
    await redis?.stop();
  });

  it('writes the same bytes as one process, and reports progress', async () => {
    const x = await input(root, 'x', 64 * 256, 256);
    const local = await createZarr(root, 'local', { shape: x.shape, chunkShape: x.chunkShape, dtype: 'float32' });
    const remote = await createZarr(root, 'remote', { shape: x.shape, chunkShape: x.chunkShape, dtype: 'float32' });
    await mapChunks(heavy, [x], local);
    const progress: number[] = [];
    await mapChunks(heavy, [x], remote, { cluster: { url: redis.url, queue, chunksPerJob: 2 }, onProgress: (done) => progress.push(done) });
    expect(chunkFiles(root, 'remote')).toEqual(chunkFiles(root, 'local'));
    expect(progress.at(-1)).toBe(64);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    // More than one worker took part.
    expect(workers.filter((w) => /job .*: 2 chunks/.test(w.output())).length).toBeGreaterThan(1);
  }, 120_000);

  it('asks Redis for its jobs’ states at most once a second while no job finishes', async () => {
    // No worker serves this queue for the first seconds: the caller hears nothing and reconciles —
    // once a second, not back to back (each pass reads every pending job: HGETALL and its state).
    const q = `${queue}-late`;
    const x = await input(root, 'xl', 4 * 256, 256);
    const out = await createZarr(root, 'outl', { shape: x.shape, chunkShape: x.chunkShape, dtype: 'float32' });
    const client = new Redis(redis.url);
    const hgetall = async (): Promise<number> => Number(/^cmdstat_hgetall:calls=(\d+)/m.exec(await client.info('commandstats'))?.[1] ?? 0);
    let late: ReturnType<typeof startWorker> | undefined;
    try {
      const before = await hgetall();
      const started = performance.now();
      const timer = setTimeout(() => (late = startWorker(redis.url, root, q)), 3000);
      await mapChunks(vectorize(['float32(float32)'])((v) => v - 1), [x], out, { cluster: { url: redis.url, queue: q } });
      clearTimeout(timer);
      const seconds = (performance.now() - started) / 1000;
      expect(seconds).toBeGreaterThan(3);
      // 4 pending jobs, at most one pass a second (and one at the end): before the fix, a pass ran
      // every 10 ms once the first quiet second was over — hundreds of HGETALLs here.
      expect((await hgetall()) - before).toBeLessThanOrEqual(4 * (Math.ceil(seconds) + 1));
    } finally {
      late?.kill('SIGKILL');
      client.disconnect();
    }
  }, 120_000);

  it('keeps a worker serving when whatever read its output has gone (stdout closed: EPIPE)', async () => {
    const q = `${queue}-unread`;
    const w = startWorker(redis.url, root, q);
    try {
      await waitFor(() => w.output().includes('ufunc worker'), 60_000, 'the worker to start');
      w.stdout!.destroy(); // its next log line meets a closed pipe
      const x = await input(root, 'xe', 8 * 256, 256);
      const local = await createZarr(root, 'locale', { shape: x.shape, chunkShape: x.chunkShape, dtype: 'float32' });
      await mapChunks(heavy, [x], local);
      const remote = await createZarr(root, 'remotee', { shape: x.shape, chunkShape: x.chunkShape, dtype: 'float32' });
      await mapChunks(heavy, [x], remote, { cluster: { url: redis.url, queue: q } });
      expect(chunkFiles(root, 'remotee')).toEqual(chunkFiles(root, 'locale'));
      expect(w.exitCode).toBe(null);
    } finally {
      w.kill('SIGKILL');
    }
  }, 120_000);

  it('finishes with the same bytes when a worker is killed mid-run', async () => {
    const x = await input(root, 'xk', 96 * 1024, 1024);
    const local = await createZarr(root, 'localk', { shape: x.shape, chunkShape: x.chunkShape, dtype: 'float32' });
    await mapChunks(heavy, [x], local);
    const remote = await createZarr(root, 'remotek', { shape: x.shape, chunkShape: x.chunkShape, dtype: 'float32' });
    let killed = false;
    await mapChunks(heavy, [x], remote, {
      cluster: { url: redis.url, queue },
      onProgress: (done) => {
        if (done >= 10 && !killed) {
          killed = true;
          workers[0]!.kill('SIGKILL');
        }
      },
    });
    expect(killed).toBe(true);
    expect(chunkFiles(root, 'remotek')).toEqual(chunkFiles(root, 'localk'));
    workers[0] = startWorker(redis.url, root, queue);
    await waitFor(() => workers[0]!.output().includes('ufunc worker'), 60_000, 'a new worker');
  }, 180_000);

  it('finishes with the same bytes when Redis restarts mid-run and loses every job', async () => {
    const x = await input(root, 'xr', 96 * 1024, 1024);
    const local = await createZarr(root, 'localr', { shape: x.shape, chunkShape: x.chunkShape, dtype: 'float32' });
    await mapChunks(heavy, [x], local);
    const remote = await createZarr(root, 'remoter', { shape: x.shape, chunkShape: x.chunkShape, dtype: 'float32' });
    let restarted: Promise<void> | undefined;
    await mapChunks(heavy, [x], remote, {
      cluster: { url: redis.url, queue },
      onProgress: (done) => {
        if (done >= 10 && !restarted) {
          restarted = redis.stop().then(() => new Promise((r) => setTimeout(r, 500))).then(() => redis.start());
        }
      },
    });
    await restarted;
    expect(chunkFiles(root, 'remoter')).toEqual(chunkFiles(root, 'localr'));
  }, 180_000);

  it('fails with the chunk and the worker when a kernel throws', async () => {
    const shift = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')((a, out) => {
      for (let i = 0; i < a.length; i++) out[i] = a[i + (a[0]! > 50 ? 1 : 0)]!;
    });
    const x = await createZarr(root, 'rows', { shape: [8, 4], chunkShape: [2, 4], dtype: 'float32' });
    await zarr.set(x.array as never, null, { data: Float32Array.from({ length: 32 }, (_, i) => (i === 20 ? 99 : 1)), shape: [8, 4], stride: [4, 1] } as never);
    const out = await createZarr(root, 'rows-out', { shape: [8, 4], chunkShape: [2, 4], dtype: 'float32' });
    const error = await mapChunks(shift, [x], out, { cluster: { url: redis.url, queue } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClusterError);
    expect((error as ClusterError).message).toMatch(/worker [^:]+:\d+: chunk \[2\]: KernelRuntimeError: Index \[4\] is out of bounds/);
    expect((error as ClusterError).chunks[0]!.chunk).toEqual([2]);
  }, 60_000);

  it('refuses hostile jobs with clear errors, writes nothing outside the store, and keeps serving', async () => {
    const outside = mkdtempSync(path.join(tmpdir(), 'ufunc-outside-'));
    const client = new Redis({ host: '127.0.0.1', port: redis.port, password });
    const q = new Queue(queue, { connection: { host: '127.0.0.1', port: redis.port, password } });
    await input(root, 'h', 16, 8);
    await createZarr(root, 'h-out', { shape: [16], chunkShape: [8], dtype: 'float32' });
    const good = describeUfunc(vectorize(['float32(float32)'])((x) => x + 1));
    const put = async (d: object): Promise<string> => {
      const { createHash } = await import('node:crypto');
      const text = canonicalJson(d);
      const hash = createHash('sha256').update(text).digest('hex');
      await client.set(`${queue}:descriptor:${hash}`, text);
      return hash;
    };
    const hostile: [string, object][] = [
      ['a kernel that reaches process', { descriptor: await put({ ...good, source: `(x) => process.mainModule.require('fs').writeFileSync('${outside}/pwned', 'x')` }), inputs: [{ array: 'h' }], outputs: ['h-out'], chunks: [[0]] }],
      ['a helper that climbs to Function', { descriptor: await put({ ...good, source: '(x) => h(x)', env: { h: { kind: 'helper', source: "(x) => x.constructor.constructor('return process')()" } } }), inputs: [{ array: 'h' }], outputs: ['h-out'], chunks: [[0]] }],
      ['a path that leaves the store', { descriptor: await put(good), inputs: [{ array: 'h' }], outputs: [`../${path.basename(outside)}/y`], chunks: [[0]] }],
      ['a chunk outside the grid', { descriptor: await put(good), inputs: [{ array: 'h' }], outputs: ['h-out'], chunks: [[7]] }],
      ['a descriptor whose hash lies', { descriptor: 'a'.repeat(64), inputs: [{ array: 'h' }], outputs: ['h-out'], chunks: [[0]] }],
    ];
    await client.set(`${queue}:descriptor:${'a'.repeat(64)}`, canonicalJson(good));
    const big = 'b'.repeat(64);
    await client.set(`${queue}:descriptor:${big}`, 'x'.repeat(100 << 20));
    hostile.push(['a 100 MB descriptor', { descriptor: big, inputs: [{ array: 'h' }], outputs: ['h-out'], chunks: [[0]] }]);
    const reasons: string[] = [];
    for (const [what, data] of hostile) {
      const job = await q.add('chunks', { v: 1, ...data }, { attempts: 1 });
      let state = '';
      const end = Date.now() + 30_000;
      while (state !== 'failed' && state !== 'completed' && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 100));
        state = await job.getState();
      }
      const failed = await q.getJob(job.id!);
      expect(state, what).toBe('failed');
      reasons.push(`${what}: ${failed!.failedReason.replace(/worker [^:]+:\d+/, 'worker W').replaceAll(outside, 'OUTSIDE').replaceAll(path.basename(outside), 'OUTSIDE')}`);
    }
    expect(reasons.join('\n')).toMatchInlineSnapshot(`
      "a kernel that reaches process: worker W: chunks [0]: KernelCompileError: \`process.mainModule.require('fs').writeFileSync(…)\` is not supported in kernels: call \`Math.*\` functions or helpers passed in \`env\` (kernel line 1:8)
        (x) => process.mainModule.require('fs').writeFileSync('OUTSIDE/pwned', 'x')
               ^
      a helper that climbs to Function: worker W: chunks [0]: KernelCompileError: \`x.constructor.constructor('return process')(…)\` is not supported in kernels: call \`Math.*\` functions or helpers passed in \`env\` (kernel line 1:8)
        (x) => x.constructor.constructor('return process')()
               ^
      a path that leaves the store: worker W: a malformed job: ChunkError: The store path of output 1 '../OUTSIDE/y' has the segment '..': segments are letters, digits, '.', '_' and '-', not '.' or '..' and not empty, so that no path can leave the store.
      a chunk outside the grid: worker W: chunks [7]: ChunkError: Chunk [7] is not in the grid of 1-dimensional chunk coordinates [0..1].
      a descriptor whose hash lies: worker W: chunks [0]: DescriptorError: The descriptor stored under aaaaaaaaaaaa… does not have that hash.
      a 100 MB descriptor: worker W: chunks [0]: DescriptorError: The descriptor bbbbbbbbbbbb… is 104857600 bytes; at most 16777216 are accepted."
    `);
    expect(readdirSync(outside)).toEqual([]);
    // The workers still serve.
    const x = await openZarr(root, 'h');
    const out = await openZarr(root, 'h-out');
    await mapChunks(vectorize(['float32(float32)'])((v) => v * 2), [x], out, { cluster: { url: redis.url, queue } });
    expect(Array.from(((await zarr.get(out.array as never, null)) as { data: Float32Array }).data).slice(0, 3)).toEqual([0, 0.2, 0.4].map(Math.fround));
    await q.close();
    client.disconnect();
  }, 120_000);
});

describe.skipIf(!hasRedis)('a Redis that cannot be reached', () => {
  it('fails the call with a ClusterError after the connect timeout, saying where and why', async () => {
    const { freePort } = await import('./redis-server.js');
    const root = mkdtempSync(path.join(tmpdir(), 'ufunc-cluster-noredis-'));
    const x = await input(root, 'x', 16, 8);
    const out = await createZarr(root, 'out', { shape: [16], chunkShape: [8], dtype: 'float32' });
    const f = vectorize(['float32(float32)'])((v) => v + 1);
    const port = await freePort();
    const error = await mapChunks(f, [x], out, { cluster: { url: `redis://:pw@127.0.0.1:${port}`, connectTimeoutMs: 1500 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClusterError);
    expect((error as Error).message).toMatch(new RegExp(`^Redis at redis://:\\*\\*\\*@127\\.0\\.0\\.1:${port} did not answer within 1\\.5 s: connect ECONNREFUSED`));
  }, 30_000);

  it('fails the call when the password is wrong', async () => {
    const redis = await startRedis(['--requirepass', 'right']);
    try {
      const root = mkdtempSync(path.join(tmpdir(), 'ufunc-cluster-badpass-'));
      const x = await input(root, 'x', 16, 8);
      const out = await createZarr(root, 'out', { shape: [16], chunkShape: [8], dtype: 'float32' });
      const f = vectorize(['float32(float32)'])((v) => v + 1);
      const error = await mapChunks(f, [x], out, { cluster: { url: `redis://:wrong@127.0.0.1:${redis.port}`, connectTimeoutMs: 1500 } }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ClusterError);
      expect((error as Error).message).toMatch(/WRONGPASS|invalid username-password/);
    } finally {
      await redis.stop();
    }
  }, 30_000);
});

describe.skipIf(!hasRedis)('a cluster over TLS', () => {
  it('runs a call through rediss:// with the server’s CA', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ufunc-tls-'));
    const key = path.join(dir, 'key.pem');
    const cert = path.join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    const { freePort } = await import('./redis-server.js');
    const port = await freePort();
    const redis = await startRedis(['--port', '0', '--tls-port', String(port), '--tls-cert-file', cert, '--tls-key-file', key, '--tls-ca-cert-file', cert, '--tls-auth-clients', 'no'], { url: () => `rediss://127.0.0.1:${port}` });
    const root = mkdtempSync(path.join(tmpdir(), 'ufunc-cluster-tls-'));
    const w = startWorker(redis.url, root, 'tlsq', ['--tls-ca', cert]);
    try {
      await waitFor(() => w.output().includes('ufunc worker'), 60_000, 'the worker');
      const x = await input(root, 'x', 64, 16);
      const out = await createZarr(root, 'out', { shape: [64], chunkShape: [16], dtype: 'float32' });
      await mapChunks(vectorize(['float32(float32)'])((v) => v + 1), [x], out, { cluster: { url: redis.url, queue: 'tlsq', tlsCaFile: cert } });
      expect(((await zarr.get(out.array as never, null)) as { data: Float32Array }).data[10]).toBe(Math.fround(1 + 1));
    } finally {
      w.kill('SIGKILL');
      await redis.stop();
    }
  }, 90_000);
});
