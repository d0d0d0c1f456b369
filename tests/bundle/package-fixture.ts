/**
 * The package as a user gets it: compiled with the build's tsconfig into a temporary folder beside
 * its package.json, and an app folder whose node_modules holds it as `ufunc` (so only its
 * `exports` map is reachable, as after `npm install ufunc`).
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface PackageFixture {
  /** The folder with the compiled package (its dist/ and package.json). */
  readonly packageDir: string;
  /** An empty app folder whose node_modules/ufunc is the package. */
  readonly appDir: string;
  /** Makes `name` (a package of this repository's node_modules) installed in the app, or not. */
  install(name: string, installed: boolean): void;
  remove(): void;
}

/**
 * Builds the package fixture. Asynchronous: the build takes tens of seconds on a loaded machine, and
 * a test worker blocked that long misses vitest's RPC deadline ("Timeout calling onTaskUpdate").
 */
export async function makePackageFixture(): Promise<PackageFixture> {
  const base = mkdtempSync(path.join(tmpdir(), 'ufunc-package-'));
  const packageDir = path.join(base, 'ufunc');
  const appDir = path.join(base, 'app');
  mkdirSync(packageDir);
  await promisify(execFile)(process.execPath, [path.join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', path.join(repoRoot, 'tsconfig.build.json'), '--outDir', path.join(packageDir, 'dist'), '--sourceMap', 'false'], {
    cwd: repoRoot,
  });
  cpSync(path.join(repoRoot, 'package.json'), path.join(packageDir, 'package.json'));
  mkdirSync(path.join(packageDir, 'node_modules'));
  // The package's own dependencies (not its optional peer `webgpu`: the app decides about that).
  for (const dependency of ['acorn']) {
    mkdirSync(path.dirname(path.join(packageDir, 'node_modules', dependency)), { recursive: true });
    symlinkSync(path.join(repoRoot, 'node_modules', dependency), path.join(packageDir, 'node_modules', dependency));
  }
  mkdirSync(path.join(appDir, 'node_modules'), { recursive: true });
  writeFileSync(path.join(appDir, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  symlinkSync(packageDir, path.join(appDir, 'node_modules/ufunc'));
  return {
    packageDir,
    appDir,
    install(name, installed) {
      const link = path.join(appDir, 'node_modules', name);
      rmSync(link, { force: true });
      if (installed) symlinkSync(path.join(repoRoot, 'node_modules', name), link);
    },
    remove: () => rmSync(base, { recursive: true, force: true }),
  };
}
