/**
 * Without a GPU, the library still imports and gpu ufuncs can be made; their first call rejects
 * with TargetUnavailableError saying what is missing (and later calls fail the same way, fast).
 * Run in a child process with the Vulkan drivers hidden, so it runs on every machine.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TargetUnavailableError } from '../../../src/errors.js';

const child = fileURLToPath(new URL('./fixtures/ufunc-child.ts', import.meta.url));

describe.skipIf(process.platform !== 'linux')('a gpu ufunc without a GPU', () => {
  it('rejects its first call with TargetUnavailableError, not the import', () => {
    const env: Record<string, string | undefined> = { ...process.env, VK_ICD_FILENAMES: undefined, VK_DRIVER_FILES: '/nonexistent.json' };
    for (const [name, value] of Object.entries(env)) if (value === undefined) delete env[name];
    const run = spawnSync(process.execPath, ['--import', 'tsx', child], { env: env as NodeJS.ProcessEnv, encoding: 'utf8', timeout: 30_000 });
    expect(run.status, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout.split('\n').find((l) => l.startsWith('{'))!);
    expect(result.imported).toBe(true);
    expect(result.made).toBe(true);
    expect(result.cpu).toEqual([2, 4]);
    for (const error of result.errors) {
      expect(error.name).toBe(TargetUnavailableError.name);
      expect(error.message).toMatch(/^no WebGPU adapter: no Vulkan driver found: VK_DRIVER_FILES=\/nonexistent\.json/);
    }
  }, 40_000);
});
