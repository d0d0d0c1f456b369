/**
 * A real `redis-server` (Debian's package; `.ci/run` installs it) on 127.0.0.1 at a free port, in a
 * directory of its own, for the cluster tests. Without the binary the tests fail where
 * UFUNC_REQUIRE_REDIS is set (CI) and are skipped elsewhere.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export function redisAvailable(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    if (process.env.UFUNC_REQUIRE_REDIS) throw new Error('UFUNC_REQUIRE_REDIS is set but redis-server is not installed (apt-get install redis-server).');
    return false;
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  stop(): Promise<void>;
  /** Starts it again on the same port (after stop), with the same arguments. */
  start(): Promise<void>;
}

/** Starts redis-server with extra arguments (`--requirepass`, `--tls-port`, …); no persistence by default. */
export async function startRedis(extra: readonly string[] = [], options: { port?: number; url?: (port: number) => string } = {}): Promise<RedisServer> {
  const port = options.port ?? (await freePort());
  const dir = mkdtempSync(path.join(tmpdir(), 'ufunc-redis-'));
  let child: ChildProcess | undefined;
  const args = ['--bind', '127.0.0.1', '--port', String(port), '--dir', dir, '--save', '', '--appendonly', 'no', ...extra];
  const start = async (): Promise<void> => {
    child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-server did not start in 10 s:\n${log}`)), 10_000);
      child!.stdout!.on('data', (d: Buffer) => {
        log += d.toString();
        if (log.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child!.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server exited with ${code}:\n${log}`));
      });
    });
  };
  await start();
  return {
    port,
    dir,
    url: options.url ? options.url(port) : `redis://127.0.0.1:${port}`,
    start,
    async stop() {
      const c = child;
      if (!c || c.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill('SIGKILL');
      });
    },
  };
}
