/**
 * The package ships what its source maps point to, or no maps: the build (tsconfig.build.json, what
 * `npm run build` and `prepare` run) emits maps only if the sources they name are in the package's
 * `files`. Checked on the compiler's effective configuration and on an actual build's output.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { repoRoot } from './package-fixture.js';

const tsc = path.join(repoRoot, 'node_modules/typescript/bin/tsc');
const files = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { files: string[] }).files;

it('the build emits source maps only where the package ships their sources', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [tsc, '-p', path.join(repoRoot, 'tsconfig.build.json'), '--showConfig'], { cwd: repoRoot, encoding: 'utf8' });
  const options = (JSON.parse(stdout) as { compilerOptions: Record<string, unknown> }).compilerOptions;
  const emitsMaps = options.sourceMap === true || options.declarationMap === true;
  // Maps only with the sources they name in the package, or inside the maps themselves.
  expect(emitsMaps && !(files.includes('src') || options.inlineSources === true)).toBe(false);
});

it('an actual build of the package has no .map file beside its .js and .d.ts files', async () => {
  const out = mkdtempSync(path.join(tmpdir(), 'ufunc-build-'));
  try {
    await promisify(execFile)(process.execPath, [tsc, '-p', path.join(repoRoot, 'tsconfig.build.json'), '--outDir', out], { cwd: repoRoot });
    const emitted = readdirSync(out, { recursive: true }).map(String);
    expect(emitted.filter((f) => f.endsWith('.js')).length).toBeGreaterThan(50);
    expect(emitted.filter((f) => f.endsWith('.map'))).toEqual([]);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}, 300_000);
