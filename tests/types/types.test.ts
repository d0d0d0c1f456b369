/**
 * Types from signatures, checked the way a user meets them: a separate strict project
 * (`strict`, `skipLibCheck: false`, the ES2022 and DOM libs, no `@types/*` added by hand) compiles
 * fixtures/consumer.ts against the built package. The fixture's `expectTypeOf` lines assert the
 * inferred kernel parameters and results; its `@ts-expect-error` lines assert that wrong arity, a
 * wrong result type and a misspelt option do not compile.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makePackageFixture, type PackageFixture, repoRoot } from '../bundle/package-fixture.js';

let fixture: PackageFixture;

beforeAll(() => {
  fixture = makePackageFixture();
  for (const file of ['consumer.ts', 'tsconfig.json']) copyFileSync(new URL(`./fixtures/${file}`, import.meta.url), path.join(fixture.appDir, file));
  // The assertion library of the fixture (vitest's expectTypeOf), not a dependency of the package.
  symlinkSync(path.join(repoRoot, 'node_modules/expect-type'), path.join(fixture.appDir, 'node_modules/expect-type'));
}, 120_000);
afterAll(() => fixture?.remove());

it('a strict app type-checks against the package, with kernel parameters and results inferred', () => {
  let output = '';
  try {
    execFileSync(process.execPath, [path.join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', fixture.appDir], { encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    output = String((error as { stdout?: string }).stdout ?? error);
  }
  expect(output).toBe('');
}, 120_000);
