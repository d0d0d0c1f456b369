/**
 * Compile errors of kernels given as functions point at the user's file (compiler/parse.ts
 * `compileError`, platform/function-origin.ts): the test runner transforms this file and its
 * fixtures as tsx and bundlers do (types stripped, code moved), and their source maps lead back.
 * Kernels given as text keep positions in the text; code a tool made without a map says so.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runInThisContext } from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { guvectorize, KernelCompileError, KernelRuntimeError, vectorize } from '../../src/index.js';
import { engineMode, setEngineMode, type EngineMode } from '../../src/targets/cpu/wasm/index.js';
import { shutdownDevice } from '../../src/targets/gpu/runtime/device.js';
import { gpuAvailable } from '../gpu-available.js';
import { TARGETS } from '../targets.js';
import { makeBadHelper, makeOverrun, makeUndefinedName, rowSum } from './fixtures/position-kernels.js';

/** Not in any kernel's `env`: TypeScript sees it, kernels do not (declared only, it does not exist). */
declare const later: number;

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

describe('compile errors of kernels given as functions', () => {
  it('point at the line of a kernel in this (transformed) test file, and quote it', () => {
    type Scalar = number;
    expect(() =>
      vectorize(['float32(float32)'])((x: Scalar): Scalar => {
        const half: Scalar = x / 2;
        return half + later;
      }),
    ).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: \`later\` is not defined in the kernel: it is not a parameter, a local variable or a name in \`env\` (a kernel cannot see variables around it: pass constants and helper functions as \`{ env: { later } }\`) (tests/compiler/positions.test.ts:30:23)
        return half + later;
                      ^]
    `);
  });

  it('point at the line of a kernel in a fixture module', () => {
    expect(() => makeUndefinedName()).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: \`offset\` is not defined in the kernel: it is not a parameter, a local variable or a name in \`env\` (a kernel cannot see variables around it: pass constants and helper functions as \`{ env: { offset } }\`) (tests/compiler/fixtures/position-kernels.ts:16:20)
        return twice + offset;
                       ^]
    `);
  });

  it('point at the line of a helper from `env` in its own module', () => {
    expect(() => makeBadHelper()).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: \`x.toFixed(…)\` is not supported in kernels: call \`Math.*\` functions or helpers passed in \`env\` (tests/compiler/fixtures/position-kernels.ts:23:41)
        return x > limit ? limit : Math.round(x.toFixed(2) as unknown as number);
                                              ^]
    `);
  });

  it('point at the kernel where it is written, not where it is handed to guvectorize', () => {
    expect(() => guvectorize(['void(float64[:], float64[:])'], '(n)->()')(rowSum)).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: \`row\` is an array; index it (\`row[i]\`) or pass it to a helper (tests/compiler/fixtures/position-kernels.ts:34:21)
        out[0] = total + (row as unknown as number);
                          ^]
    `);
  });

  it('point at the file a tsx program runs (tsx strips types and joins lines)', () => {
    const tsx = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
    const printed = execFileSync(tsx, [fixture('position-tsx.ts')], { encoding: 'utf8', cwd: fileURLToPath(new URL('../..', import.meta.url)) });
    expect(printed).toMatchInlineSnapshot(`
      "An object literal is not supported in kernels (tests/compiler/fixtures/position-tsx.ts:11:30)
        const options: Options = { gain: 2 };
                                 ^
      "
    `);
  });

  it('give the positions of a plain JS file, which nothing transformed', () => {
    const path = fixture('position-plain.js');
    const kernels = runInThisContext(readFileSync(path, 'utf8'), { filename: path }) as (v: typeof vectorize) => unknown;
    expect(() => kernels(vectorize)).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: \`offset\` is not defined in the kernel: it is not a parameter, a local variable or a name in \`env\` (a kernel cannot see variables around it: pass constants and helper functions as \`{ env: { offset } }\`) (tests/compiler/fixtures/position-plain.js:6:16)
        return y + offset;
                   ^]
    `);
  });

  it('say that the position is in transformed code when the file differs and there is no map', () => {
    // What a transpiler that writes no source map would run in place of position-kernels.ts.
    const made = '(function (vectorize) { return vectorize(["float64(float64)"])((x)=>{const twice=x*2;return twice+offset}) })';
    const kernels = runInThisContext(made, { filename: fixture('position-kernels.ts') }) as (v: typeof vectorize) => unknown;
    expect(() => kernels(vectorize)).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: \`offset\` is not defined in the kernel: it is not a parameter, a local variable or a name in \`env\` (a kernel cannot see variables around it: pass constants and helper functions as \`{ env: { offset } }\`) (kernel line 1:36 of the code a build tool made from tests/compiler/fixtures/position-kernels.ts, not of that file, which has no source map to map it back)
        (x)=>{const twice=x*2;return twice+offset}
                                           ^]
    `);
  });

  it('give positions in the text of a kernel given as source text', () => {
    expect(() => vectorize(['float64(float64)'])('(x) => {\n  const y = x * 2;\n  return y + offset;\n}')).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: \`offset\` is not defined in the kernel: it is not a parameter, a local variable or a name in \`env\` (a kernel cannot see variables around it: pass constants and helper functions as \`{ env: { offset } }\`) (kernel line 3:14)
          return y + offset;
                     ^]
    `);
  });

  it('give positions in the text of a function made from a string, which has no file', () => {
    const made = new Function('return (x) => {\n  return x + offset;\n}')() as (x: number) => number;
    expect(() => vectorize(['float64(float64)'])(made)).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: \`offset\` is not defined in the kernel: it is not a parameter, a local variable or a name in \`env\` (a kernel cannot see variables around it: pass constants and helper functions as \`{ env: { offset } }\`) (kernel line 2:14)
          return x + offset;
                     ^]
    `);
  });

  it('keep the position in the kernel\'s text as `location`', () => {
    const error = (() => {
      try {
        makeUndefinedName();
      } catch (e) {
        return e as KernelCompileError;
      }
    })();
    expect(error).toBeInstanceOf(KernelCompileError);
    expect(error!.location?.line).toBe(3);
  });
});

describe('run-time index errors', () => {
  const initialMode = engineMode();
  afterAll(async () => {
    setEngineMode(initialMode);
    if (gpuAvailable) await shutdownDevice();
  });
  const CASES: [string, EngineMode][] = TARGETS.flatMap((t): [string, EngineMode][] => (t === 'gpu' ? [[t, 'auto']] : [[t, 'js'], [t, 'wasm']]));
  const overrun = '(row, out) => {\n  let s = 0;\n  for (let i = 0; i <= row.length; i++) s += row[i];\n  out[0] = s;\n}';
  const message = async (f: () => Promise<unknown>, mode: EngineMode): Promise<string> => {
    setEngineMode(mode);
    try {
      await f();
    } catch (error) {
      expect(error).toBeInstanceOf(KernelRuntimeError);
      return (error as Error).message.replace(/^gpu call #\d+ \(`kernel`\) failed: /, '');
    } finally {
      setEngineMode(initialMode);
    }
    throw new Error('no error');
  };

  it.each(CASES)('quote the kernel line under the sentence on %s (engine %s)', async (target, mode) => {
    const f = guvectorize(['void(float32[:], float32[:])'], '(n)->()', { target: target as 'cpu' })(overrun);
    expect(await message(() => f({ data: new Float32Array(8), shape: [2, 4] }) as Promise<unknown>, mode)).toBe(
      [
        'Index [4] is out of bounds for `row` at kernel line 3:46 (its shape is [4]). The outputs may be partially written.',
        '    for (let i = 0; i <= row.length; i++) s += row[i];',
        '                                               ^',
      ].join('\n'),
    );
  });

  it('quote the line of a helper where the index is in the helper', async () => {
    const at = (row: Float32Array, i: number) => row[i]!;
    const f = guvectorize(['void(float32[:], float32[:])'], '(n)->()', { env: { at } })('(row, out) => {\n  out[0] = at(row, row.length);\n}');
    expect(await message(() => f(new Float32Array(3)), 'js')).toMatch(/out of bounds for `row` at kernel line 1:\d+ \(its shape is \[3\]\)\. The outputs may be partially written\.\n {2}\(row, i\) => row\[i\]\n {2}\s+\^$/);
  });

  it('quote the line of a kernel given as a function, as the code that ran has it', async () => {
    expect(await message(() => makeOverrun()(new Float64Array(3)) as Promise<unknown>, 'js')).toMatch(/out of bounds for `row` at kernel line 2:\d+ .*\n {2}\s*out\[0\] = row\[row\.length\];\n {2}\s*\^$/);
  });
});
