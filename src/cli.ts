#!/usr/bin/env node
/**
 * `ufunc`, the package's command:
 *
 *   ufunc worker --redis URL --store DIR [--queue NAME] [--target parallel|cpu|gpu] [--concurrency N]
 *                [--lock-ms MS] [--tls-ca FILE]
 *       takes chunk jobs from the queue and runs them on this machine, over the Zarr store at DIR
 *   ufunc run DESCRIPTOR.json --store DIR --inputs PATH[,PATH…] --outputs PATH[,PATH…]
 *             [--redis URL [--queue NAME] [--chunks-per-job N] [--tls-ca FILE]] [--target T]
 *       runs a ufunc descriptor over Zarr arrays of the store, on the cluster when --redis is given,
 *       else here; shows a progress bar
 */
import { readFileSync } from 'node:fs';
import './platform/node.js';
import { ufuncFromDescriptor, validateDescriptor } from './cluster/descriptor.js';
import { startWorker } from './cluster/worker.js';
import { UfuncError } from './errors.js';
import { mapChunks, openZarr, progressBar } from './zarr/index.js';
import type { Ufunc } from './callable.js';

const USAGE = `usage:
  ufunc worker --redis URL --store DIR [--queue NAME] [--target parallel|cpu|gpu] [--concurrency N] [--lock-ms MS] [--tls-ca FILE]
  ufunc run DESCRIPTOR.json --store DIR --inputs PATH[,PATH...] --outputs PATH[,PATH...] [--redis URL] [--queue NAME] [--chunks-per-job N] [--tls-ca FILE] [--target T]`;

function parseFlags(args: readonly string[]): { positional: string[]; flags: Map<string, string> } {
  const positional: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      if (eq > 0) flags.set(a.slice(2, eq), a.slice(eq + 1));
      else if (i + 1 < args.length) flags.set(a.slice(2), args[++i]!);
      else throw new UsageError(`${a} needs a value`);
    } else positional.push(a);
  }
  return { positional, flags };
}

class UsageError extends Error {}

function need(flags: Map<string, string>, name: string): string {
  const v = flags.get(name);
  if (v === undefined) throw new UsageError(`--${name} is required`);
  return v;
}

function integer(flags: Map<string, string>, name: string): number | undefined {
  const v = flags.get(name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer, found '${v}'`);
  return n;
}

/**
 * A worker's log line. A worker outlives whatever reads its output (a shell pipe, a supervisor
 * restarted): once stdout is closed (EPIPE), it stops logging and keeps serving jobs, where an
 * unhandled stream error would kill it mid-job.
 */
function logLine(line: string): void {
  if (stdoutClosed) return;
  process.stdout.write(`${line}\n`);
}
let stdoutClosed = false;
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  stdoutClosed = true;
});

async function worker(flags: Map<string, string>): Promise<void> {
  const w = await startWorker({
    url: need(flags, 'redis'),
    store: need(flags, 'store'),
    ...(flags.has('queue') && { queue: flags.get('queue')! }),
    ...(flags.has('target') && { target: flags.get('target')! }),
    ...(flags.has('tls-ca') && { tlsCaFile: flags.get('tls-ca')! }),
    ...(integer(flags, 'concurrency') !== undefined && { concurrency: integer(flags, 'concurrency')! }),
    ...(integer(flags, 'lock-ms') !== undefined && { lockDuration: integer(flags, 'lock-ms')! }),
    onJob: ({ id, chunks, ms, times, error }) => {
      const split = times ? ` (read ${times.readMs.toFixed(1)}, kernel ${times.kernelMs.toFixed(1)}, write ${times.writeMs.toFixed(1)} ms)` : '';
      logLine(error ? `job ${id}: failed: ${error}` : `job ${id}: ${chunks} chunk${chunks === 1 ? '' : 's'} in ${ms.toFixed(1)} ms${split}`);
    },
  });
  logLine(`ufunc worker ${w.name}: queue '${flags.get('queue') ?? 'ufunc'}', store ${flags.get('store')}, target ${flags.get('target') ?? 'parallel'}`);
  const stop = (): void => {
    void w.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

async function run(positional: readonly string[], flags: Map<string, string>): Promise<void> {
  const file = positional[0];
  if (!file) throw new UsageError('ufunc run needs a descriptor file');
  const descriptor = validateDescriptor(readFileSync(file, 'utf8'));
  const ufunc = ufuncFromDescriptor(descriptor, flags.get('target') ?? 'parallel') as Ufunc;
  const store = need(flags, 'store');
  const inputs = await Promise.all(need(flags, 'inputs').split(',').map((p) => openZarr(store, p)));
  const outputs = await Promise.all(need(flags, 'outputs').split(',').map((p) => openZarr(store, p)));
  const redis = flags.get('redis');
  await mapChunks(ufunc, inputs, outputs, {
    onProgress: progressBar(),
    ...(redis !== undefined && {
      cluster: {
        url: redis,
        ...(flags.has('queue') && { queue: flags.get('queue')! }),
        ...(flags.has('tls-ca') && { tlsCaFile: flags.get('tls-ca')! }),
        ...(integer(flags, 'chunks-per-job') !== undefined && { chunksPerJob: integer(flags, 'chunks-per-job')! }),
      },
    }),
  });
}

async function main(argv: readonly string[]): Promise<void> {
  const [command, ...rest] = argv;
  const { positional, flags } = parseFlags(rest);
  if (command === 'worker') return worker(flags);
  if (command === 'run') return run(positional, flags);
  throw new UsageError(command ? `unknown command '${command}'` : 'no command');
}

main(process.argv.slice(2)).catch((e: unknown) => {
  if (e instanceof UsageError) process.stderr.write(`ufunc: ${e.message}\n${USAGE}\n`);
  else if (e instanceof UfuncError) process.stderr.write(`ufunc: ${e.name}: ${e.message}\n`);
  else process.stderr.write(`ufunc: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exit(e instanceof UsageError ? 2 : 1);
});
