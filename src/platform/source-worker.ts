/**
 * Node worker threads on a module of this library that may exist only as TypeScript source.
 *
 * In the package, a thread's script is the `.js` file beside its caller. Run from source (tsx,
 * vitest), only the `.ts` file exists, and Node 20 workers do not get the module hooks a TypeScript
 * loader registered in the calling thread (`--import tsx` included): a small bootstrap imports the
 * module, and where that import fails for its extension, registers tsx in the thread and retries.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

const bootstraps = new Map<string, string>();

/**
 * The source of a bootstrap (for `new Worker(source, { eval: true })`) that imports the TypeScript
 * module `ts` in a worker thread.
 */
export function sourceBootstrap(ts: URL): string {
  let bootstrap = bootstraps.get(ts.href);
  if (bootstrap !== undefined) return bootstrap;
  let tsx: string | null = null;
  try {
    // The ESM build of tsx's API (`require.resolve` would give the CommonJS one, whose `register`
    // fails from a worker): found through tsx's own exports map.
    const manifest = createRequire(import.meta.url).resolve('tsx/package.json');
    const entry = (JSON.parse(readFileSync(manifest, 'utf8')) as { exports: Record<string, { import: { default: string } }> }).exports['./esm/api']!.import.default;
    tsx = new URL(entry, pathToFileURL(manifest)).href;
  } catch {
    // Without tsx the bootstrap rethrows the extension error, and the thread's `error` event reports it.
  }
  bootstrap = `
    const worker = ${JSON.stringify(ts.href)};
    const tsx = ${JSON.stringify(tsx)};
    import(worker).catch(async (error) => {
      if (error?.code !== 'ERR_UNKNOWN_FILE_EXTENSION' || tsx === null) throw error;
      (await import(tsx)).register();
      await import(worker + '?tsx'); // another URL: the failed import stays cached under the first
    });`;
  bootstraps.set(ts.href, bootstrap);
  return bootstrap;
}

/**
 * Starts a worker thread on the module `js`, or, where only its TypeScript source `ts` exists (run
 * from source), on that.
 *
 * @returns undefined where neither file exists
 */
export function startSourceWorker(js: URL, ts: URL, options: WorkerOptions): Worker | undefined {
  if (existsSync(fileURLToPath(js))) return new Worker(js, options);
  if (!existsSync(fileURLToPath(ts))) return undefined;
  return new Worker(sourceBootstrap(ts), { ...options, eval: true });
}
