/**
 * Bundling an app that uses the package with esbuild, for Node and for the browser, and running
 * it: the `exports` conditions pick the right build, the parallel target finds its worker when the
 * package's `ufunc/worker` entry is bundled beside the app (and says what to do when it is not),
 * and `webgpu`, an optional peer dependency, is loaded only for the gpu target.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without declarations
import { serveDirectory } from '../../examples/browser/serve.mjs';
import { browserRequired, launchChromium } from '../browser/chromium.js';
import { makePackageFixture, type PackageFixture } from './package-fixture.js';

const gpuRequired = process.env.UFUNC_REQUIRE_GPU === '1';

interface AppReport {
  done: boolean;
  targets: string[];
  results: { target: string; ok: boolean; detail: string }[];
  error?: { name: string; message: string };
}

let fixture: PackageFixture;

beforeAll(async () => {
  fixture = await makePackageFixture();
  copyFileSync(new URL('./fixtures/app.ts', import.meta.url), path.join(fixture.appDir, 'app.ts'));
}, 120_000);
afterAll(() => fixture?.remove());

async function bundle(platform: 'node' | 'browser', outdir: string, withWorker: boolean, minify: Partial<Pick<esbuild.BuildOptions, 'minify' | 'minifyWhitespace' | 'minifySyntax' | 'minifyIdentifiers' | 'keepNames'>> = {}): Promise<esbuild.BuildResult> {
  return esbuild.build({
    absWorkingDir: fixture.appDir,
    entryPoints: withWorker ? { app: 'app.ts', worker: 'ufunc/worker' } : { app: 'app.ts' },
    outdir: path.join(fixture.appDir, outdir),
    bundle: true,
    format: 'esm',
    platform,
    target: 'es2022',
    // dawn.node is a native addon: a Node bundle leaves the optional `webgpu` package external.
    external: platform === 'node' ? ['webgpu'] : [],
    logLevel: 'silent',
    ...minify,
  });
}

function runNode(outdir: string, targets: string, ...more: string[]): AppReport {
  const run = spawnSync(process.execPath, [path.join(fixture.appDir, outdir, 'app.js'), targets, ...more], { encoding: 'utf8', timeout: 60_000 });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout.trim().split('\n').at(-1)!) as AppReport;
}

describe('an app bundled with esbuild for Node', { timeout: 120_000 }, () => {
  it('runs on cpu and parallel, its workers started from the bundled ufunc/worker', async () => {
    const result = await bundle('node', 'out-node', true);
    expect(result.errors).toEqual([]);
    // The Node build never reaches the browser's modules, and the reverse (checked below).
    expect(readFileSync(path.join(fixture.appDir, 'out-node/app.js'), 'utf8')).not.toContain('navigator.gpu');
    const report = runNode('out-node', 'cpu,parallel');
    expect(report.error).toBeUndefined();
    expect(report.results).toEqual([
      { target: 'cpu', ok: true, detail: 'max |cpu − cpu| = 0' },
      { target: 'parallel', ok: true, detail: 'max |parallel − cpu| = 0' },
    ]);
  });

  it('without the worker bundled, fails the parallel call saying what to bundle', async () => {
    await bundle('node', 'out-node-noworker', false);
    const report = runNode('out-node-noworker', 'parallel');
    expect(report.results).toHaveLength(1);
    expect(report.results[0]!.ok).toBe(false);
    expect(report.results[0]!.detail).toBe(
      `TargetUnavailableError: The parallel target's worker script is missing: ${path.join(fixture.appDir, 'out-node-noworker/worker.js')} does not exist. ` +
        'If you bundled ufunc, bundle its worker too, as worker.js beside your bundle (esbuild: `esbuild app.js worker=ufunc/worker --bundle --platform=node --format=esm --outdir=out`), or name the script with setParallelOptions({ workerUrl }).',
    );
  });

  it.runIf(gpuRequired)('runs on gpu when the app installed the optional webgpu package', async () => {
    await bundle('node', 'out-node-gpu', true);
    fixture.install('webgpu', true);
    try {
      const report = runNode('out-node-gpu', 'gpu');
      expect(report.results).toEqual([{ target: 'gpu', ok: true, detail: expect.stringMatching(/^max \|gpu − cpu\| = /) }]);
    } finally {
      fixture.install('webgpu', false);
    }
  });

  it('without webgpu installed, fails the gpu call saying how to install it, and cpu still runs', async () => {
    await bundle('node', 'out-node-nogpu', true);
    fixture.install('webgpu', false);
    const report = runNode('out-node-nogpu', 'cpu,gpu');
    expect(report.results).toEqual([
      { target: 'cpu', ok: true, detail: 'max |cpu − cpu| = 0' },
      {
        target: 'gpu',
        ok: false,
        detail:
          "TargetUnavailableError: The gpu target needs the `webgpu` package (Dawn's WebGPU for Node), an optional peer dependency that is not installed: run `npm install webgpu`, pass your own device with `setDevice(device)`, or use target 'cpu' or 'parallel'.",
      },
    ]);
    expect((await runNodeTargets('out-node-nogpu'))).toEqual(['cpu', 'parallel']);
  });
});

describe('an app bundled with esbuild and minified', { timeout: 120_000 }, () => {
  it('with --minify (renamed identifiers), runs on cpu and parallel: the helper is found by its new name', async () => {
    await bundle('node', 'out-minified', true, { minify: true });
    // The helper really was renamed: env passes it as `{ scale: <new name> }`.
    expect(readFileSync(path.join(fixture.appDir, 'out-minified/app.js'), 'utf8')).toMatch(/\{scale:(?!scale\b)[\w$]+\}/);
    const report = runNode('out-minified', 'cpu,parallel');
    expect(report.error).toBeUndefined();
    expect(report.results.map((r) => [r.target, r.ok])).toEqual([['cpu', true], ['parallel', true]]);
  });

  it('with --minify --keep-names, refuses a kernel given as a function, saying to give it as source text', async () => {
    await bundle('node', 'out-minified-keep', true, { minify: true, keepNames: true });
    const report = runNode('out-minified-keep', 'cpu');
    expect(report.error?.name).toBe('KernelCompileError');
    expect(report.error?.message).toMatch(
      /is not defined in the kernel.*`env` has `scale`, which the kernel never names: if this code was minified, its names no longer match the keys of `env` \(and `--keep-names` hides the new names too\)\. Give the kernel and its helpers as source text/s,
    );
  });

  it('with --minify --keep-names, runs a kernel and helper given as source text on cpu and parallel', async () => {
    const report = runNode('out-minified-keep', 'cpu,parallel', 'text');
    expect(report.error).toBeUndefined();
    expect(report.results.map((r) => [r.target, r.ok])).toEqual([['cpu', true], ['parallel', true]]);
  });

  it('minified without renaming identifiers, runs on cpu and parallel', async () => {
    await bundle('node', 'out-minified-names', true, { minifyWhitespace: true, minifySyntax: true });
    const report = runNode('out-minified-names', 'cpu,parallel');
    expect(report.error).toBeUndefined();
    expect(report.results.map((r) => [r.target, r.ok])).toEqual([['cpu', true], ['parallel', true]]);
  });
});

/** availableTargets() of the bundled app without arguments. */
async function runNodeTargets(outdir: string): Promise<string[]> {
  return runNode(outdir, '').targets;
}

describe('an app bundled with esbuild for the browser', { timeout: 120_000 }, () => {
  it('bundles without reaching any Node module or the webgpu package', async () => {
    const result = await bundle('browser', 'out-browser', true);
    expect(result.errors).toEqual([]);
    const app = readFileSync(path.join(fixture.appDir, 'out-browser/app.js'), 'utf8');
    expect(app).not.toMatch(/node:|worker_threads|dawn/);
  });

  describe.runIf(browserRequired)('in headless Chromium', () => {
    let server: Server;
    let base: string;
    let chromium: Awaited<ReturnType<typeof launchChromium>>;

    beforeAll(async () => {
      await bundle('browser', 'out-browser', true);
      writeFileSync(path.join(fixture.appDir, 'out-browser/index.html'), '<!doctype html><meta charset="utf-8"><script type="module" src="./app.js"></script>');
      ({ server, url: base } = await serveDirectory(path.join(fixture.appDir, 'out-browser')));
      chromium = await launchChromium();
    }, 120_000);
    afterAll(async () => {
      await chromium?.close();
      server?.close();
    });

    it('runs on every target the page offers, each equal to cpu', async () => {
      const page = await chromium.browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(base);
      await page.waitForFunction(() => (globalThis as { appResults?: { done: boolean } }).appResults?.done === true, undefined, { timeout: 100_000 });
      const report = (await page.evaluate(() => (globalThis as { appResults?: unknown }).appResults)) as AppReport;
      await page.close();
      expect(errors).toEqual([]);
      expect(report.error).toBeUndefined();
      expect(report.targets).toEqual(['cpu', 'parallel', 'gpu']);
      expect(report.results.map((r) => [r.target, r.ok])).toEqual([['cpu', true], ['parallel', true], ['gpu', true]]);
    });
  });
});



