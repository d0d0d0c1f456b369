/**
 * The pool in a real process: a script that uses the parallel target (async, sync, a call still in
 * flight when the script's own code ends) prints the right answers and exits by itself, run from
 * source with `tsx` and compiled with `tsc` under plain `node`. (vitest itself runs the workers
 * from source without tsx in the calling thread, so all three ways of loading the worker are met.)
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const tsxCli = path.join(root, 'node_modules/tsx/dist/cli.mjs');
const tscCli = path.join(root, 'node_modules/typescript/bin/tsc');
// Inside the repository (ignored by git), so that compiled code finds node_modules as a package would.
const scratch = path.join(root, 'tmp');

/** A script body using the library imported as `lib`; the answers it prints are checked below. */
const SCRIPTS = {
  async: `
    lib.setParallelOptions({ threshold: 0 });
    const twice = lib.vectorize(['float64(float64)'], { target: 'parallel' })((x) => 2 * x);
    const x = Float64Array.from({ length: 100000 }, (_, i) => i);
    const [a, b] = await Promise.all([twice(x), twice(x, { out: lib.sharedArray(x.length, 'float64') })]);
    const c = twice.sync(x);
    console.log(JSON.stringify([a[99999], b[4], c[12345]]));`,
  sync: `
    lib.setParallelOptions({ threshold: 0 });
    const twice = lib.vectorize(['float64(float64)'], { target: 'parallel' })((x) => 2 * x);
    const x = Float64Array.from({ length: 100000 }, (_, i) => i);
    let sum = 0;
    for (let k = 0; k < 20; k++) sum += twice.sync(x)[k * 1000];
    console.log(JSON.stringify([sum]));`,
  // The script's code ends with a call in flight: the pool must hold the process until it is answered.
  inFlight: `
    lib.setParallelOptions({ threshold: 0 });
    const twice = lib.vectorize(['float64(float64)'], { target: 'parallel' })((x) => 2 * x);
    const x = Float64Array.from({ length: 2000000 }, (_, i) => i);
    twice(x).then((y) => console.log(JSON.stringify([y[1999999]])));`,
} as const;

const EXPECTED: Record<keyof typeof SCRIPTS, unknown[]> = {
  async: [199998, 8, 24690],
  sync: [380000],
  inFlight: [3999998],
};

/** Runs a command; resolves with its output and exit code, or rejects if it has not exited in time. */
function runToExit(command: string, args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child: ChildProcess = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`\`${command} ${args.join(' ')}\` did not exit within ${timeoutMs} ms (stdout: ${stdout}, stderr: ${stderr})`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

let dir: string;
beforeAll(() => {
  mkdirSync(scratch, { recursive: true });
  dir = mkdtempSync(path.join(scratch, 'parallel-process-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a script using the parallel target exits by itself', () => {
  describe.each(Object.keys(SCRIPTS) as (keyof typeof SCRIPTS)[])('%s', (name) => {
    it('from source under tsx', async () => {
      const script = path.join(dir, `${name}.ts`);
      writeFileSync(script, `import * as lib from ${JSON.stringify(pathToFileURL(path.join(root, 'src/index.ts')).href)};\n${SCRIPTS[name]}\n`);
      const { code, stdout, stderr } = await runToExit(process.execPath, [tsxCli, script], 30_000);
      expect(stderr).not.toMatch(/Error/);
      expect(code).toBe(0);
      expect(JSON.parse(stdout.trim())).toEqual(EXPECTED[name]);
    }, 40_000);
  });

  describe('compiled with tsc, under plain node', () => {
    let compiled: string;
    beforeAll(async () => {
      compiled = path.join(dir, 'dist');
      // --noCheck: this test is about the emitted JS, not about type errors elsewhere in the tree.
      await promisify(execFile)(process.execPath, [tscCli, '-p', path.join(root, 'tsconfig.build.json'), '--outDir', compiled, '--noCheck', '--declaration', 'false', '--sourceMap', 'false'], { cwd: root });
    }, 120_000);

    it.each(Object.keys(SCRIPTS) as (keyof typeof SCRIPTS)[])('%s', async (name) => {
      const script = path.join(dir, `${name}.mjs`);
      writeFileSync(script, `import * as lib from ${JSON.stringify(pathToFileURL(path.join(compiled, 'src/index.js')).href)};\n${SCRIPTS[name]}\n`);
      const { code, stdout, stderr } = await runToExit(process.execPath, [script], 30_000);
      expect(stderr).not.toMatch(/Error/);
      expect(code).toBe(0);
      expect(JSON.parse(stdout.trim())).toEqual(EXPECTED[name]);
    }, 40_000);
  });
});
