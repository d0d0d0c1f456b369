/**
 * Builds the browser example (main.ts, and the parallel target's worker beside it) with esbuild and
 * serves this folder from 127.0.0.1 with the headers that make the page cross-origin isolated
 * (`Cross-Origin-Opener-Policy: same-origin`, `Cross-Origin-Embedder-Policy: require-corp`), the
 * one kind of page that has SharedArrayBuffer and so the parallel target.
 *
 *   npm run example:browser        # then open http://127.0.0.1:8080/
 *   open http://127.0.0.1:8080/?isolated=0 for the same page without isolation (no parallel target)
 *   and http://127.0.0.1:8080/?waitAsync=0 for a page as in a browser without Atomics.waitAsync
 *
 * The example imports the library's source here; an app that installed the package imports 'ufunc'
 * and bundles 'ufunc/worker' beside itself as worker.js (see the README's browser quick start).
 */
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');

/** Bundles main.ts and the worker into dist/ beside this file. */
export async function buildBrowserExample() {
  await esbuild.build({
    entryPoints: { main: path.join(here, 'main.ts'), worker: path.join(here, 'worker.ts') },
    outdir: path.join(here, 'dist'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'warning',
    plugins: [
      {
        // The examples import the Node entry (src/index.ts) so they also run under tsx; in the page
        // they get the browser entry, as a bundler resolving the package 'ufunc' would.
        name: 'browser-entry',
        setup(build) {
          build.onResolve({ filter: /\/src\/index\.js$/ }, () => ({ path: path.join(root, 'src/browser.ts') }));
        },
      },
    ],
  });
}

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.map': 'application/json', '.css': 'text/css' };

/**
 * Serves `dir` on 127.0.0.1. Pages are cross-origin isolated unless asked for with `?isolated=0`.
 * @returns the server and its base URL
 */
export function serveDirectory(dir, port = 0) {
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    let file = path.join(dir, decodeURIComponent(url.pathname));
    if (!file.startsWith(dir)) return void response.writeHead(403).end();
    if (existsSync(file) && statSync(file).isDirectory()) file = path.join(file, 'index.html');
    if (!existsSync(file)) return void response.writeHead(404).end('not found');
    const headers = { 'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream', 'Cache-Control': 'no-store' };
    if (url.searchParams.get('isolated') !== '0') {
      headers['Cross-Origin-Opener-Policy'] = 'same-origin';
      headers['Cross-Origin-Embedder-Policy'] = 'require-corp';
    }
    response.writeHead(200, headers);
    createReadStream(file).pipe(response);
  });
  return new Promise((resolve) => {
    server.listen(port, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${server.address().port}/` }));
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  await buildBrowserExample();
  const { url } = await serveDirectory(here, Number(process.env.PORT ?? 8080));
  console.log(`serving the browser example at ${url} (cross-origin isolated; add ?isolated=0 for a page without)`);
}
