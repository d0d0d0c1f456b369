/**
 * Types from signatures, checked the way users meet them: separate strict projects (`strict`,
 * `skipLibCheck: false`) compile fixtures against the built package, as installed (only its
 * `exports` map is reachable):
 *
 * - a browser app (libs ES2022 + DOM, no `@types/*`): fixtures/consumer.ts, whose `expectTypeOf`
 *   lines assert the inferred kernel parameters and results and whose `@ts-expect-error` lines
 *   assert that wrong arity, a wrong result type and a misspelt option do not compile;
 * - a Node-only app (lib ES2022, `types: ["node"]`, no DOM, no WebGPU typings): the same file plus
 *   node-consumer.ts (a device of another binding goes to `setDevice`);
 * - an app with WebGPU's own types (`@webgpu/types`): its GPUDevice goes to `setDevice`, and a
 *   DeviceArray's buffer is its GPUBuffer (webgpu-consumer.ts);
 * - the browser and Node apps also compile precise.ts, the README's type guarantees: exact option
 *   objects (a misspelt key is an error beside valid ones), results by layout and method, typed
 *   device arrays, no `sync` on gpu ufuncs, `Slice` helpers that take typed arrays;
 * - the browser app and the strictest one also compile wrapping.ts, the README's recipe for handing
 *   results to stdlib and scijs, against those libraries' published typings (fixtures/typings/, installed in the app as those packages);
 * - the strictest app (`noUncheckedIndexedAccess`, `exactOptionalPropertyTypes`): consumer.ts,
 *   precise.ts and wrapping.ts again.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makePackageFixture, type PackageFixture, repoRoot } from '../bundle/package-fixture.js';

let fixture: PackageFixture;

beforeAll(async () => {
  fixture = await makePackageFixture();
  const fixtures = ['consumer.ts', 'node-consumer.ts', 'webgpu-consumer.ts', 'precise.ts', 'wrapping.ts', 'tsconfig.json', 'tsconfig.node.json', 'tsconfig.webgpu.json', 'tsconfig.strictest.json'];
  for (const file of fixtures) copyFileSync(new URL(`./fixtures/${file}`, import.meta.url), path.join(fixture.appDir, file));
  // The assertion library of the fixtures (vitest's expectTypeOf), and the typings each project
  // chooses: none of them is a dependency of the package.
  mkdirSync(path.join(fixture.appDir, 'node_modules/@types'));
  mkdirSync(path.join(fixture.appDir, 'node_modules/@webgpu'));
  for (const name of ['expect-type', '@types/node', 'undici-types', '@webgpu/types']) {
    symlinkSync(path.join(repoRoot, 'node_modules', name), path.join(fixture.appDir, 'node_modules', name));
  }
  // stdlib's and scijs's ndarray, as far as wrapping.ts needs them: their typings only.
  cpSync(fileURLToPath(new URL('./fixtures/typings', import.meta.url)), path.join(fixture.appDir, 'node_modules'), { recursive: true });
}, 120_000);
afterAll(() => fixture?.remove());

/** The compiler's report on the project `tsconfig` of the app: '' when it type-checks. */
// Asynchronous, so the test worker stays responsive while tsc runs (10 s or more here).
async function typeCheck(tsconfig: string): Promise<string> {
  try {
    await promisify(execFile)(process.execPath, [path.join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', path.join(fixture.appDir, tsconfig)], { encoding: 'utf8' });
    return '';
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? error);
  }
}

it('a strict browser app type-checks against the package, with kernel parameters and results inferred', async () => {
  expect(await typeCheck('tsconfig.json')).toBe('');
}, 120_000);

it('a strict Node-only app (lib ES2022, types node, no DOM, skipLibCheck false) type-checks with no extra setup', async () => {
  expect(await typeCheck('tsconfig.node.json')).toBe('');
}, 120_000);

it("an app with WebGPU's own types passes its GPUDevice to setDevice and gets GPUBuffers back", async () => {
  expect(await typeCheck('tsconfig.webgpu.json')).toBe('');
}, 120_000);

it('the strictest app (noUncheckedIndexedAccess, exactOptionalPropertyTypes) type-checks, slices and all', async () => {
  expect(await typeCheck('tsconfig.strictest.json')).toBe('');
}, 120_000);
