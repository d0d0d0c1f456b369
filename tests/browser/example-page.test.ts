/**
 * The browser example (examples/browser) in headless Chromium: the examples on every target the
 * page offers, each compared with the cpu target's answer in the page. Runs wherever Chromium is
 * installed (and fails, never skips, there); CI installs it.
 */
import type { Server } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without declarations
import { buildBrowserExample, serveDirectory } from '../../examples/browser/serve.mjs';
import { browserRequired, launchChromium } from './chromium.js';

const exampleDir = fileURLToPath(new URL('../../examples/browser/', import.meta.url));

interface PageResults {
  done: boolean;
  crossOriginIsolated: boolean;
  waitAsync: boolean;
  targets: string[];
  unavailable: { target: string; error: string; message: string }[];
  checks: { example: string; target: string; elements: number; maxDifference: number; tolerance: number; ok: boolean }[];
  error?: string;
}

describe.runIf(browserRequired)('the browser example in headless Chromium', { timeout: 120_000 }, () => {
  let server: Server;
  let base: string;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let browser: BrowserContext;

  beforeAll(async () => {
    await buildBrowserExample();
    ({ server, url: base } = await serveDirectory(path.resolve(exampleDir)));
    chromium = await launchChromium();
    browser = chromium.browser;
  }, 120_000);

  afterAll(async () => {
    await chromium?.close();
    server?.close();
  });

  async function runPage(query: string): Promise<PageResults> {
    const page = await browser.newPage();
    const consoleErrors: string[] = [];
    page.on('pageerror', (error) => consoleErrors.push(error.message));
    try {
      await page.goto(`${base}${query}`);
      await page.waitForFunction(() => (globalThis as { ufuncResults?: PageResults }).ufuncResults?.done === true, undefined, { timeout: 100_000 });
      const results = (await page.evaluate(() => (globalThis as { ufuncResults?: PageResults }).ufuncResults)) as PageResults;
      expect(consoleErrors).toEqual([]);
      return results;
    } finally {
      await page.close();
    }
  }

  it.each([
    ['with Atomics.waitAsync', ''],
    ['as in a browser without Atomics.waitAsync: polling on the page and in the workers', '?waitAsync=0'],
  ])('runs every example on cpu, parallel (Web Workers) and gpu (navigator.gpu), each equal to cpu (%s)', async (_label, query) => {
    const results = await runPage(query);
    expect(results.error).toBeUndefined();
    expect(results.waitAsync).toBe(query === '');
    expect(results.crossOriginIsolated).toBe(true);
    expect(results.targets).toEqual(['cpu', 'parallel', 'gpu']);
    expect(results.unavailable).toEqual([]);
    const examples = ['hermite seed table', 'saxpy, 1,048,576 float32', 'lorenz96 RK4 step, 2,000 × 40'];
    for (const target of ['parallel', 'gpu']) {
      expect(results.checks.filter((c) => c.target === target).map((c) => c.example)).toEqual(examples);
    }
    for (const check of results.checks) {
      expect(check.elements, `${check.example} on ${check.target}`).toBeGreaterThan(0);
      expect(check.maxDifference, `${check.example} on ${check.target}`).toBeLessThanOrEqual(check.tolerance);
    }
  });

  it('without cross-origin isolation, offers no parallel target and says why when asked for it', async () => {
    const results = await runPage('?isolated=0');
    expect(results.error).toBeUndefined();
    expect(results.crossOriginIsolated).toBe(false);
    expect(results.targets).not.toContain('parallel');
    expect(results.unavailable).toEqual([
      {
        target: 'parallel',
        error: 'TargetUnavailableError',
        message:
          'The parallel target needs SharedArrayBuffer, which a page has only when it is cross-origin isolated: serve the page with the headers `Cross-Origin-Opener-Policy: same-origin` and `Cross-Origin-Embedder-Policy: require-corp`, or use target \'cpu\'.',
      },
    ]);
    expect(results.checks.filter((c) => c.target === 'gpu').every((c) => c.ok)).toBe(true);
  });
});
