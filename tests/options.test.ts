import { describe, expect, it } from 'vitest';

import { ArgumentError, guvectorize, type NDArray, setParallelOptions, vectorize } from '../src/index.js';
import { checkOptions, closestName, rule } from '../src/options.js';

const add = (a: number, b: number) => a + b;

describe('options', () => {
  it('refuse an unknown factory option, naming it and the option meant', () => {
    expect(() => vectorize(['float64(float64, float64)'], { targt: 'gpu' } as never)).toThrowErrorMatchingInlineSnapshot(
      `[ArgumentError: Unknown option \`targt\` for \`vectorize\`; did you mean \`target\`? The options of \`vectorize\` are \`target\`, \`env\`, \`boundsCheck\`, \`float64\`, \`associative\`, \`fastmath\`, \`disableJit\` and \`identity\`.]`,
    );
    expect(() => guvectorize(['void(float64[:], float64[:])'], '(n)->(n)', { boundscheck: false } as never)).toThrowErrorMatchingInlineSnapshot(
      `[ArgumentError: Unknown option \`boundscheck\` for \`guvectorize\`; did you mean \`boundsCheck\`? The options of \`guvectorize\` are \`target\`, \`env\`, \`boundsCheck\`, \`float64\`, \`associative\`, \`fastmath\` and \`disableJit\`.]`,
    );
    // guvectorize has no reduce, so no identity.
    expect(() => guvectorize(['void(float64[:], float64[:])'], '(n)->(n)', { identity: 0 } as never)).toThrowError(/Unknown option `identity` for `guvectorize`/);
  });

  it('refuse values that are not allowed, saying what is', () => {
    expect(() => vectorize([], { identity: 'none' } as never)).toThrowErrorMatchingInlineSnapshot(
      `[ArgumentError: \`identity\` must be a number, a bigint, a boolean or 'reorderable', found the string "none".]`,
    );
    expect(() => vectorize([], { boundsCheck: 'yes' } as never)).toThrowErrorMatchingInlineSnapshot(
      `[ArgumentError: \`boundsCheck\` must be a boolean (true or false), found the string "yes".]`,
    );
    expect(() => vectorize([], { env: 3 } as never)).toThrowErrorMatchingInlineSnapshot(
      `[ArgumentError: \`env\` must be an object of constants and helper functions, found 3.]`,
    );
    expect(() => vectorize([], 'gpu' as never)).toThrowErrorMatchingInlineSnapshot(
      `[ArgumentError: The options of \`vectorize\` must be an object, found the string "gpu".]`,
    );
  });

  it('check call options', async () => {
    const f = vectorize(['float64(float64, float64)'])(add);
    const x = Float64Array.of(1, 2);
    // @ts-expect-error: a misspelt option is a type error too; the runtime check is for plain JS
    await expect(f(x, x, { ot: new Float64Array(2) })).rejects.toThrowErrorMatchingInlineSnapshot(
      `[ArgumentError: Unknown option \`ot\` for a call; did you mean \`out\`? The options of a call are \`out\`, \`dims\`, \`where\`, \`dtype\`, \`signature\`, \`casting\`, \`axes\`, \`axis\`, \`keepdims\`, \`signal\`, \`timeout\` and \`seed\`.]`,
    );
    const h = guvectorize(['void(float64, float64[:])'], '()->(n)')((v: number, out: Float64Array) => {
      for (let i = 0; i < out.length; i++) out[i] = v;
    });
    // @ts-expect-error: `dims` must be an object, for the type checker too
    expect(() => h.sync(x, { dims: 4 })).toThrowErrorMatchingInlineSnapshot(
      `[ArgumentError: \`dims\` must be an object of core dimension sizes, e.g. \`{ n: 16 }\`, found 4.]`,
    );
    expect((h.sync(x, { dims: { n: 3 } }) as NDArray).shape).toEqual([2, 3]);
  });

  it('check the options of reduce, accumulate and outer', async () => {
    const f = vectorize(['float64(float64, float64)'], { identity: 0 })(add);
    const x = Float64Array.of(1, 2, 3);
    await expect(f.reduce(x, { idenity: 0 } as never)).rejects.toThrowErrorMatchingInlineSnapshot(
      `[ArgumentError: Unknown option \`idenity\` for \`reduce\`; did you mean \`identity\`? The options of \`reduce\` are \`axis\`, \`keepdims\`, \`initial\`, \`identity\`, \`where\`, \`out\` and \`dtype\`.]`,
    );
    await expect(f.reduce(x, { identity: 'none' } as never)).rejects.toThrowError(ArgumentError);
    await expect(f.reduce(x, { axis: 0.5 })).rejects.toThrowErrorMatchingInlineSnapshot(`[ArgumentError: \`axis\` must be an integer, a list of integers or null, found 0.5.]`);
    await expect(f.accumulate(x, { axes: 0 } as never)).rejects.toThrowError(/Unknown option `axes` for `accumulate`; did you mean `axis`\?/);
    await expect(f.outer(x, x, { outt: null } as never)).rejects.toThrowError(/did you mean `out`\?/);
    expect(await f.reduce(x, { axis: null })).toBe(6);
  });

  it('check the parallel target\'s options', () => {
    expect(() => setParallelOptions({ worker: 2 } as never)).toThrowErrorMatchingInlineSnapshot(
      `[ArgumentError: Unknown option \`worker\` for \`setParallelOptions\`; did you mean \`workers\`? The options of \`setParallelOptions\` are \`workers\`, \`threshold\` and \`workerUrl\`.]`,
    );
  });

  it('suggest only names near enough to be a typo', () => {
    expect(closestName('targt', ['target', 'env'])).toBe('target');
    expect(closestName('tagret', ['target', 'env'])).toBe('target'); // a swap is one edit
    expect(closestName('BOUNDSCHECK', ['boundsCheck'])).toBe('boundsCheck');
    expect(closestName('colour', ['target', 'env'])).toBeUndefined();
    expect(() => checkOptions({ colour: 1 }, { target: rule.any() }, '`f`')).toThrowErrorMatchingInlineSnapshot(
      `[ArgumentError: Unknown option \`colour\` for \`f\`. The options of \`f\` are \`target\`.]`,
    );
  });
});
