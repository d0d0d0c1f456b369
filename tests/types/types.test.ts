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
 *   DeviceArray's buffer is its GPUBuffer (webgpu-consumer.ts).
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makePackageFixture, type PackageFixture, repoRoot } from '../bundle/package-fixture.js';

let fixture: PackageFixture;

beforeAll(async () => {
  fixture = await makePackageFixture();
  const fixtures = ['consumer.ts', 'node-consumer.ts', 'webgpu-consumer.ts', 'tsconfig.json', 'tsconfig.node.json', 'tsconfig.webgpu.json'];
  for (const file of fixtures) copyFileSync(new URL(`./fixtures/${file}`, import.meta.url), path.join(fixture.appDir, file));
  // The assertion library of the fixtures (vitest's expectTypeOf), and the typings each project
  // chooses: none of them is a dependency of the package.
  mkdirSync(path.join(fixture.appDir, 'node_modules/@types'));
  mkdirSync(path.join(fixture.appDir, 'node_modules/@webgpu'));
  for (const name of ['expect-type', '@types/node', 'undici-types', '@webgpu/types']) {
    symlinkSync(path.join(repoRoot, 'node_modules', name), path.join(fixture.appDir, 'node_modules', name));
  }
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
