/**
 * Compile errors and run-time index errors of kernels given as functions point at the user's file
 * (compiler/parse.ts `compileError`, compiler/source-excerpt.ts `indexError`,
 * platform/function-origin.ts): the test runner transforms this file and its fixtures as tsx and
 * bundlers do (types stripped, code moved), and their source maps lead back. Kernels given as text
 * keep positions in the text; code a tool made without a map says so.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runInThisContext } from 'node:vm';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { guvectorize, KernelCompileError, KernelRuntimeError, type TargetName, vectorize } from '../../src/index.js';
import { installedPlatform } from '../../src/platform/platform.js';
import { engineMode, setEngineMode, type EngineMode } from '../../src/targets/cpu/wasm/index.js';
import { shutdownDevice } from '../../src/targets/gpu/runtime/device.js';
import { gpuAvailable } from '../gpu-available.js';
import { TARGETS } from '../targets.js';
import { makeBadHelper, makeHelperOverrun, makeOverrun, makeUndefinedName, rowSum } from './fixtures/position-kernels.js';

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
      [KernelCompileError: \`later\` is not defined in the kernel: it is not a parameter, a local variable or a name in \`env\` (a kernel cannot see variables around it: pass constants and helper functions as \`{ env: { later } }\`) (tests/compiler/positions.test.ts:32:23)
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
  }, 60_000); // a tsx child process: seconds to start on a loaded 2-core machine

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

  it.runIf(gpuAvailable)('point at the line of a construct the gpu refuses when it compiles the kernel', async () => {
    const far = vectorize(['float32(float32)'], { target: 'gpu' })((x: number): number => {
      const shift: number = 2;
      return x * shift - 1e39;
    });
    const error = await Promise.resolve(far(Float32Array.of(1))).then(() => new Error('no error'), (e: unknown) => e as Error);
    expect(error).toBeInstanceOf(KernelCompileError);
    expect(error.message).toMatchInlineSnapshot(`"The constant 1e+39 at tests/compiler/positions.test.ts:100:26 is a double (float64) value, which the gpu target computes in f32 (WGSL has no 64-bit floats), and f32 cannot hold it: it would be Infinity, not 1e+39. Use a constant within float32's range (about 1.2e-38 to 3.4e38), make the computation float32 on purpose (\`Math.fround(1e+39)\`), or use target 'cpu' or 'parallel'."`);
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
  const CASES: [TargetName, EngineMode][] = TARGETS.flatMap((t): [TargetName, EngineMode][] => (t === 'gpu' ? [[t, 'auto']] : [[t, 'js'], [t, 'wasm']]));
  const overrun = '(row, out) => {\n  let s = 0;\n  for (let i = 0; i <= row.length; i++) s += row[i];\n  out[0] = s;\n}';
  /** The message of the KernelRuntimeError `f` rejects with (the gpu's naming of the call left out). */
  const message = async (f: () => unknown, mode: EngineMode): Promise<string> => {
    setEngineMode(mode);
    try {
      await f();
    } catch (error) {
      expect(error).toBeInstanceOf(KernelRuntimeError);
      return (error as Error).message.replace(/^gpu call #\d+ \(`\w+`\) failed: /, '');
    } finally {
      setEngineMode(initialMode);
    }
    throw new Error('no error');
  };
  /** The message of the error `call` rejects with on every target and engine: they must all be the same. */
  const sameOnEveryTarget = async (call: (target: 'cpu') => unknown): Promise<string> => {
    const messages: string[] = [];
    // Typed as the cpu's ufuncs: the calls read no result.
    for (const [target, mode] of CASES) messages.push(await message(() => call(target as 'cpu'), mode));
    expect(messages).toEqual(messages.map(() => messages[0]));
    return messages[0]!;
  };

  it.each(CASES)('quote the line of a kernel given as text under the sentence on %s (engine %s)', async (target, mode) => {
    const f = guvectorize(['void(float32[:], float32[:])'], '(n)->()', { target: target as 'cpu' })(overrun);
    expect(await message(() => f({ data: new Float32Array(8), shape: [2, 4] }), mode)).toBe(
      [
        'Index [4] is out of bounds for `row` at kernel line 3:46 (its shape is [4]). The outputs may be partially written.',
        '    for (let i = 0; i <= row.length; i++) s += row[i];',
        '                                               ^',
      ].join('\n'),
    );
  });

  // The calling thread says the position of an error that a worker or the gpu reported.
  it('point at the line of a kernel in this (transformed) test file, the same on every target and engine', async () => {
    type Row = Float32Array;
    const message = await sameOnEveryTarget((target) =>
      guvectorize(['void(float32[:], float32[:])'], '(n)->()', { target })((row: Row, out: Row): void => {
        let sum: number = 0;
        for (let i: number = 0; i <= row.length; i++) sum += row[i]!;
        out[0] = sum;
      })({ data: new Float32Array(8), shape: [2, 4] }),
    );
    expect(message).toMatchInlineSnapshot(`
      "Index [4] is out of bounds for \`row\` at tests/compiler/positions.test.ts:184:62 (its shape is [4]). The outputs may be partially written.
        for (let i: number = 0; i <= row.length; i++) sum += row[i]!;
                                                             ^"
    `);
  });

  it('point at the line of a helper in its own module, the same on every target and engine', async () => {
    expect(await sameOnEveryTarget((target) => makeHelperOverrun(target)(new Float32Array(3)))).toMatchInlineSnapshot(`
      "Index [3] is out of bounds for \`row\` at tests/compiler/fixtures/position-kernels.ts:47:10 (its shape is [3]). The outputs may be partially written.
        return row[n]!;
               ^"
    `);
  });

  it('point at the line of a kernel in a fixture module, in `f.sync` on the calling thread too', async () => {
    expect(await message(() => makeOverrun('cpu')(new Float64Array(3)), 'js')).toMatchInlineSnapshot(`
      "Index [3] is out of bounds for \`row\` at tests/compiler/fixtures/position-kernels.ts:40:14 (its shape is [3]). The outputs may be partially written.
        out[0] = row[row.length];
                 ^"
    `);
    const sync = await message(() => makeOverrun('parallel').sync(new Float64Array(3)), 'js');
    expect(sync).toBe(await message(() => makeOverrun('parallel')(new Float64Array(3)), 'js'));
    expect(sync).toBe(await message(() => makeOverrun('cpu')(new Float64Array(3)), 'js'));
  });

  it('find the position in the file only when the message is first read, on every target', async () => {
    const origin = vi.spyOn(installedPlatform()!, 'functionOrigin');
    try {
      for (const target of TARGETS) {
        const error = await Promise.resolve(makeHelperOverrun(target as 'cpu')(new Float32Array(3))).then(() => new Error('no error'), (e: unknown) => e as Error);
        expect(error).toBeInstanceOf(KernelRuntimeError);
        expect(origin).not.toHaveBeenCalled();
        expect(error.message).toContain(' at tests/compiler/fixtures/position-kernels.ts:47:10 (');
        expect(error.message).toBe(error.message);
        expect(origin).toHaveBeenCalledTimes(1);
        origin.mockClear();
      }
    } finally {
      origin.mockRestore();
    }
  });

  it('point at the line of a helper in this file used by a kernel given as text', async () => {
    const at = (row: Float32Array, i: number) => row[i]!;
    const f = guvectorize(['void(float32[:], float32[:])'], '(n)->()', { env: { at } })('(row, out) => {\n  out[0] = at(row, row.length);\n}');
    expect(await message(() => f(new Float32Array(3)), 'js')).toMatchInlineSnapshot(`
      "Index [3] is out of bounds for \`row\` at tests/compiler/positions.test.ts:232:50 (its shape is [3]). The outputs may be partially written.
        const at = (row: Float32Array, i: number) => row[i]!;
                                                     ^"
    `);
  });

  it('point at the file a tsx program runs (tsx strips types and joins lines), on the cpu and in workers', () => {
    const tsx = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
    const printed = execFileSync(tsx, [fixture('position-tsx-runtime.ts')], { encoding: 'utf8', cwd: fileURLToPath(new URL('../..', import.meta.url)) });
    expect(printed).toMatchInlineSnapshot(`
      "cpu js: Index [4] is out of bounds for \`row\` at tests/compiler/fixtures/position-tsx-runtime.ts:15:58 (its shape is [4]). The outputs may be partially written.
        for (let i: number = 0; i <= row.length; i++) sum += row[i]!;
                                                             ^
      cpu wasm: Index [4] is out of bounds for \`row\` at tests/compiler/fixtures/position-tsx-runtime.ts:15:58 (its shape is [4]). The outputs may be partially written.
        for (let i: number = 0; i <= row.length; i++) sum += row[i]!;
                                                             ^
      parallel js: Index [4] is out of bounds for \`row\` at tests/compiler/fixtures/position-tsx-runtime.ts:15:58 (its shape is [4]). The outputs may be partially written.
        for (let i: number = 0; i <= row.length; i++) sum += row[i]!;
                                                             ^
      parallel wasm: Index [4] is out of bounds for \`row\` at tests/compiler/fixtures/position-tsx-runtime.ts:15:58 (its shape is [4]). The outputs may be partially written.
        for (let i: number = 0; i <= row.length; i++) sum += row[i]!;
                                                             ^
      "
    `);
  }, 60_000); // a tsx child process: seconds to start on a loaded 2-core machine

  it('give the positions of a plain JS file, which nothing transformed', async () => {
    const path = fixture('position-plain-overrun.js');
    const kernels = runInThisContext(readFileSync(path, 'utf8'), { filename: path }) as (g: typeof guvectorize, target: string) => (x: Float64Array) => unknown;
    const cpu = await message(() => kernels(guvectorize, 'cpu')(new Float64Array(2)), 'js');
    expect(cpu).toMatchInlineSnapshot(`
      "Index [2] is out of bounds for \`row\` at tests/compiler/fixtures/position-plain-overrun.js:6:23 (its shape is [2]). The outputs may be partially written.
        out[0] = row[0] + row[n];
                          ^"
    `);
    expect(await message(() => kernels(guvectorize, 'parallel')(new Float64Array(2)), 'wasm')).toBe(cpu);
  });

  it('say that the position is in transformed code when the file differs and there is no map', async () => {
    // What a transpiler that writes no source map would run in place of position-kernels.ts.
    const made = '(function (guvectorize) { return guvectorize(["void(float64[:], float64[:])"], "(n)->()")((row,out)=>{out[0]=row[row.length]}) })';
    const kernels = runInThisContext(made, { filename: fixture('position-kernels.ts') }) as (g: typeof guvectorize) => (x: Float64Array) => unknown;
    expect(await message(() => kernels(guvectorize)(new Float64Array(2)), 'js')).toMatchInlineSnapshot(`
      "Index [2] is out of bounds for \`row\` at kernel line 1:20 of the code a build tool made from tests/compiler/fixtures/position-kernels.ts, not of that file, which has no source map to map it back (its shape is [2]). The outputs may be partially written.
        (row,out)=>{out[0]=row[row.length]}
                           ^"
    `);
  });
});
