/**
 * Ufunc descriptors: a round trip gives a ufunc computing the same bits; the hash names the
 * content; and what comes from outside is validated, size-limited and compiled, never run as
 * JavaScript — hostile kernels and helpers are refused with the compiler's errors.
 */
import { describe, expect, it } from 'vitest';
import { guvectorize, KernelCompileError, vectorize } from '../../src/api.js';
import { canonicalJson, describeUfunc, descriptorHash, DescriptorError, ufuncFromDescriptor, validateDescriptor, type UfuncDescriptor } from '../../src/cluster/index.js';

const scale = vectorize(['float64(float64)', 'float32(float32)'], { env: { K: 2.5, NEG_ZERO: -0, helper: (x: number) => x * x } })(
  // @ts-expect-error helper and K come from env
  (x) => helper(x) * K + NEG_ZERO,
);

describe('describeUfunc / ufuncFromDescriptor', () => {
  it('round-trips a vectorize ufunc with helpers and constants to the same bits, on every host target', async () => {
    const d = describeUfunc(scale);
    expect(d.env).toEqual({ K: { kind: 'number', value: 2.5 }, NEG_ZERO: { kind: 'number', value: '-0' }, helper: { kind: 'helper', source: '(x) => x * x' } });
    const xs = Float64Array.from({ length: 1000 }, (_, i) => Math.sin(i) * 1e3);
    const want = await scale(xs);
    for (const target of ['cpu', 'parallel']) {
      const again = ufuncFromDescriptor(validateDescriptor(JSON.parse(canonicalJson(d))), target);
      expect(Array.from(await again(xs))).toEqual(Array.from(want));
    }
  });

  it('round-trips a guvectorize ufunc and its layout', async () => {
    const cumsum = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { boundsCheck: false })((x, out) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) {
        s += x[i]!;
        out[i] = s;
      }
    });
    const d = describeUfunc(cumsum);
    expect(d).toMatchObject({ kind: 'guvectorize', layout: '(n)->(n)', signatures: ['void(float32[:], float32[:])'], options: { boundsCheck: false } });
    const again = ufuncFromDescriptor(d, 'cpu');
    const x = { data: Float32Array.from({ length: 12 }, (_, i) => i), shape: [3, 4] };
    expect(Array.from((await again(x)).data)).toEqual(Array.from((await cumsum(x)).data));
  });

  it('names equal content by an equal hash, whatever the key order', () => {
    const d = describeUfunc(scale);
    const reordered = JSON.parse(JSON.stringify({ env: d.env, options: d.options, layout: d.layout, signatures: d.signatures, source: d.source, kind: d.kind, format: d.format })) as UfuncDescriptor;
    expect(descriptorHash(reordered)).toBe(descriptorHash(d));
    expect(descriptorHash({ ...d, source: `${d.source} ` })).not.toBe(descriptorHash(d));
  });

  it('refuses what cannot travel', () => {
    const f = vectorize(['float64(float64)'], { env: { table: { a: 1 } } })('(x) => x');
    expect(() => describeUfunc(f)).toThrowErrorMatchingInlineSnapshot(`[DescriptorError: \`env.table\` cannot travel in a descriptor: only numbers, bigints, booleans, helper functions (or their source text) and typed arrays can; found an object.]`);
    expect(() => describeUfunc((x: number) => x)).toThrow(DescriptorError);
  });
});

describe('validateDescriptor: what comes from outside', () => {
  const good = (): Record<string, unknown> => JSON.parse(canonicalJson(describeUfunc(scale))) as Record<string, unknown>;

  it('refuses unknown fields, wrong types, bad names and sizes, before parsing any code', () => {
    const cases: [string, unknown][] = [
      ['an extra field', { ...good(), run: 'now' }],
      ['a wrong format', { ...good(), format: 'ufunc-descriptor/0' }],
      ['a source that is not text', { ...good(), source: { toString: 1 } }],
      ['an env name that reaches the prototype', { ...good(), env: JSON.parse('{"__proto__": {"kind": "number", "value": 1}}') }],
      ['a helper with extra fields', { ...good(), env: { h: { kind: 'helper', source: '(x) => x', then: 'x' } } }],
      ['a huge source', { ...good(), source: 'x'.repeat((1 << 20) + 1) }],
      ['a lookup table that is not base64', { ...good(), env: { t: { kind: 'array', dtype: 'float32', base64: '!!!!' } } }],
      ['a number that is not one', { ...good(), env: { k: { kind: 'number', value: '1e3' } } }],
    ];
    for (const [what, raw] of cases) {
      expect(() => validateDescriptor(raw), what).toThrow(DescriptorError);
    }
    expect(() => validateDescriptor('x'.repeat(17 << 20))).toThrow(/at most 16777216 are accepted/);
  });

  it.each([
    ['reaches process', '(x) => process.exit(1)'],
    ['reaches globalThis', '(x) => globalThis.x'],
    ['calls require', "(x) => require('fs')"],
    ['imports', "(x) => import('fs')"],
    ['climbs to Function through constructor', "(x) => x.constructor.constructor('return process')()"],
    ['reaches a prototype', '(x) => ({}).__proto__'],
    ['is not a function', 'process.exit(1)'],
  ])('compiles a kernel that %s to a KernelCompileError, without running it', (_what, source) => {
    const d = validateDescriptor({ ...good(), source, env: {} });
    let error: unknown;
    try {
      ufuncFromDescriptor(d, 'cpu');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(KernelCompileError);
  });

  it('compiles a hostile helper to a KernelCompileError when the kernel calls it', async () => {
    const d = validateDescriptor({ ...good(), source: '(x) => h(x)', env: { h: { kind: 'helper', source: "(x) => require('child_process').execSync('touch /tmp/pwned')" } } });
    await expect(async () => {
      const f = ufuncFromDescriptor(d, 'cpu');
      await f(new Float64Array(1));
    }).rejects.toBeInstanceOf(KernelCompileError);
  });
});
