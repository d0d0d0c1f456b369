/**
 * Headless Chromium for the browser tests: Debian's `chromium` package (scripts/install-chromium.sh
 * installs it; CI runs that script), driven by playwright-core. WebGPU is enabled; on a machine
 * without a GPU, Chromium's SwiftShader gives `navigator.gpu` a real (CPU) adapter.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

export const CHROMIUM = process.env.UFUNC_CHROMIUM ?? '/usr/bin/chromium';

/** Whether the browser tests must run: Chromium is installed, or the environment demands it. */
export const browserInstalled = existsSync(CHROMIUM);
export const browserRequired = browserInstalled || process.env.UFUNC_REQUIRE_BROWSER === '1';

/** A fresh profile each time (playwright passes it as `--user-data-dir`). */
export async function launchChromium(): Promise<{ browser: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(path.join(tmpdir(), 'ufunc-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--enable-unsafe-webgpu', '--headless', '--no-sandbox', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
