/**
 * The gpu target's `explain` (targets/gpu/index.ts, codegen/precision.ts): which float64 locals
 * (plain JS numbers) run in f32 and which stay exact in i32, as the WGSL code generator decides,
 * and the choices made for the call (several devices, streaming, index checks, fusion).
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { getGpuOptions, guvectorize, setGpuOptions, vectorize } from '../../../src/index.js';
import { describeGpu } from '../../gpu-available.js';
import { setChunkBytes } from '../../../src/targets/gpu/runtime/streaming.js';

const DEFAULT_LIMIT = getGpuOptions().memoryLimit;
/** The devices the run uses (UFUNC_TEST_GPU_DEVICES): these texts are one device's; tests/targets/gpu/device-workers.test.ts has several's. */
const DEVICES = getGpuOptions().devices;

describeGpu('explain on the gpu', () => {
  beforeEach(() => setGpuOptions({ devices: 1 }));
  afterEach(() => {
    setGpuOptions({ memoryLimit: DEFAULT_LIMIT, fuseChains: true, devices: DEVICES }); // the defaults, and the run's devices
    setChunkBytes(undefined);
  });

  it('names the float64 locals computed in f32 and those kept in i32 (an escape-time loop)', async () => {
    const escape = vectorize(['int32(float32, float32)'], { target: 'gpu' })('(cr, ci) => {\n  let x = 0, y = 0, n = 0;\n  while (n < 100 && x * x + y * y < 4) {\n    const t = x * x - y * y + cr;\n    y = 2 * x * y + ci;\n    x = t;\n    n++;\n  }\n  return n;\n}');
    const c = Float32Array.of(0.25, -1.5);
    await escape(c, c); // loads the target
    expect(escape.explain(c, c)).toMatchInlineSnapshot(`"Runs on the gpu. Float64 locals (JS numbers) computed in f32, as WGSL has no f64 (the cpu computes them in double, so results may differ in rounding; docs/gpu.md "Doubles in float32 kernels"): \`x\`, \`y\`, \`t\`. Float64 locals kept exact in i32 (they only ever hold integers, as loop counters do): \`n\`. Recorded at once, not fused with other calls: an operand is a host array (its call moves data and waits)."`);
  });

  it('names them in helpers too, with local Float64Arrays, and says when indices are not checked', () => {
    const scale = (c: number, i: number) => {
      let p = c;
      for (let k = 0; k < 2; k++) p *= 0.5;
      return p * i;
    };
    const rows = guvectorize(['void(float32, float32[:])'], '()->(n)', { target: 'gpu', env: { scale }, boundsCheck: false })(
      '(x, out) => {\n  let c = 1;\n  const seen = new Float64Array(4);\n  for (let i = 0; i < out.length; i++) {\n    c *= i + 1;\n    seen[i % 4] = c;\n    out[i] = scale(x / c, i);\n  }\n}',
    );
    expect(rows.explain(Float32Array.of(1, 2), { dims: { n: 8 } })).toMatchInlineSnapshot(`"Runs on the gpu. Float64 locals (JS numbers) computed in f32, as WGSL has no f64 (the cpu computes them in double, so results may differ in rounding; docs/gpu.md "Doubles in float32 kernels"): \`c\`, \`seen\` (a Float64Array), \`c\` (in \`scale\`), \`p\` (in \`scale\`). Float64 locals kept exact in i32 (they only ever hold integers, as loop counters do): \`i\`, \`i\` (in \`scale\`), \`k\` (in \`scale\`). Indices are not checked (boundsCheck: false). Recorded at once, not fused with other calls: it is not an element-wise (vectorize) call."`);
  });

  it('says nothing of doubles for a kernel that has none', () => {
    const twice = vectorize(['float32(float32)'], { target: 'gpu' })('(x) => x * 2');
    expect(twice.explain(Float32Array.of(1))).toMatchInlineSnapshot(`"Runs on the gpu. Recorded at once, not fused with other calls: an operand is a host array (its call moves data and waits)."`);
  });

  it('says when a call is streamed, and when it joins a chain for fusion', () => {
    const twice = vectorize(['float32(float32)'], { target: 'gpu' })('(x) => x * 2');
    setGpuOptions({ memoryLimit: 2 ** 20 });
    expect(twice.explain(new Float32Array(2 ** 20))).toMatchInlineSnapshot(`"Runs on the gpu. Its host arrays need 8.0 MiB of device memory, more than the memory limit of 1.0 MiB (setGpuOptions({ memoryLimit })): it runs in chunks of at most 0.3 MiB, whose copies overlap the kernels. Recorded at once, not fused with other calls: an operand is a host array (its call moves data and waits)."`);
    setGpuOptions({ memoryLimit: DEFAULT_LIMIT });
    setChunkBytes(2 ** 20);
    expect(twice.explain(new Float32Array(2 ** 20))).toMatchInlineSnapshot(`"Runs on the gpu. Its host arrays need 8.0 MiB of device memory, a large call with host outputs: it runs in chunks of at most 1.0 MiB, whose copies overlap the kernels. Recorded at once, not fused with other calls: an operand is a host array (its call moves data and waits)."`);
    setChunkBytes(undefined);
    setGpuOptions({ fuseChains: true });
    expect(twice.explain(new Float32Array(4))).toMatchInlineSnapshot(`"Runs on the gpu. Recorded at once, not fused with other calls: an operand is a host array (its call moves data and waits)."`);
  });
});
