/**
 * Where gathering a sparse host view stops paying: a call on a view of every k-th element, with
 * the view uploaded as its covering span (`span`: k times the bytes, copied by memcpy, the kernel
 * reading it strided) against its elements gathered on the host (`packed`), for inputs and for
 * outputs (`span`: the span read back and the view's elements picked out of it), float32 and uint8
 * elements, in alternating rounds in one process; and which placement host-operands.ts's rule
 * chooses (inputs: the span up to 64 bytes an element; outputs: packed unless dense). The crossover
 * is the machine's (the host's copy rates and the bus decide it, not the GPU's memory).
 *
 *   npx tsx bench/host-placement.ts            # 2^24 elements a view (the GPU machine)
 *   npx tsx bench/host-placement.ts --quick    # 2^20, for lavapipe
 *
 * Checks both placements' results bit for bit. Prints each row as it is measured, then the table.
 */
import { synchronize, vectorize } from '../src/index.js';
import { describeAdapter, setIdleReleaseMs } from '../src/targets/gpu/runtime/device.js';
import { placeHostOperand, setSpanSlack } from '../src/targets/gpu/runtime/host-operands.js';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const N = quick ? 2 ** 20 : 2 ** 24;
const ROUNDS = quick ? 3 : 7;
const STEPS = [2, 3, 4, 8, 16];

setIdleReleaseMs(Infinity);
const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
const scaleBytes = vectorize(['float32(uint8, float32)'], { target: 'gpu' })((x: number, y: number) => x * 0.5 + y);

interface Case {
  readonly name: string;
  readonly k: number;
  readonly call: () => Promise<unknown>;
  /** The output array to compare between placements. */
  readonly result: () => Uint8Array;
  /** The placement the rule chooses for the view. */
  readonly rule: string;
}
const ruleFor = (data: Float32Array | Uint8Array, k: number, role: 'input' | 'output') =>
  placeHostOperand({ data, dtype: data instanceof Uint8Array ? 'uint8' : 'float32', offset: 0, loopStrides: [k], coreStrides: [], coreShape: [] }, [N], role).mode;
const y = new Float32Array(N).map((_, i) => (i % 1000) * 0.001);
const z = new Float32Array(N);
const cases: Case[] = [];
for (const k of STEPS) {
  const xs = new Float32Array(k * N).map((_, i) => (i % 997) * 0.5);
  cases.push({ name: `float32 input, every ${k}`, k, rule: ruleFor(xs, k, 'input'), call: () => saxpy(2, { data: xs, shape: [N], strides: [k] }, y, { out: z }), result: () => new Uint8Array(z.buffer) });
}
for (const k of STEPS) {
  const bytes = new Uint8Array(k * N).map((_, i) => i % 251);
  cases.push({ name: `uint8 input, every ${k}`, k, rule: ruleFor(bytes, k, 'input'), call: () => scaleBytes({ data: bytes, shape: [N], strides: [k] }, y, { out: z }), result: () => new Uint8Array(z.buffer) });
}
for (const k of STEPS) {
  const outs = new Float32Array(k * N);
  cases.push({ name: `float32 output, every ${k}`, k, rule: ruleFor(outs, k, 'output'), call: () => saxpy(2, y, y, { out: { data: outs, shape: [N], strides: [k] } }), result: () => new Uint8Array(outs.buffer) });
}

/** Slack that gathers every strided view, and slack that places every view as its span. */
const PLACEMENTS = { packed: 1, span: Infinity } as const;

async function once(c: Case, placement: keyof typeof PLACEMENTS): Promise<number> {
  setSpanSlack(PLACEMENTS[placement]);
  try {
    const t0 = performance.now();
    await c.call();
    await synchronize();
    return performance.now() - t0;
  } finally {
    setSpanSlack(undefined);
  }
}

console.log(`gpu: ${await describeAdapter()}; ${N} elements a view, ${ROUNDS} rounds, placements in turns`);
const rows: string[][] = [];
for (const c of cases) {
  // Warm-up and the check: each placement once, results bit for bit alike.
  await once(c, 'packed');
  const packedResult = c.result().slice();
  await once(c, 'span');
  const spanResult = c.result();
  if (packedResult.length !== spanResult.length || packedResult.some((b, i) => b !== spanResult[i])) throw new Error(`${c.name}: the two placements' results differ`);
  const times: Record<keyof typeof PLACEMENTS, number[]> = { packed: [], span: [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const p of (r % 2 === 0 ? ['packed', 'span'] : ['span', 'packed']) as (keyof typeof PLACEMENTS)[]) times[p].push(await once(c, p));
  }
  const packed = median(times.packed);
  const span = median(times.span);
  const rule = c.rule;
  console.log(`${c.name}: packed ${packed.toFixed(2)} ms, span ${span.toFixed(2)} ms (span ÷ packed ${(span / packed).toFixed(2)}×; the rule places it ${rule})`);
  rows.push([c.name, packed.toPrecision(4), span.toPrecision(4), `${(span / packed).toFixed(2)}×`, rule, span < packed ? 'span' : 'packed']);
}
console.log(
  `\n# Span or packed placement of sparse host views (bench/host-placement.ts${quick ? ' --quick' : ''})\n\n- gpu: ${await describeAdapter()}\n- ${new Date().toISOString()}, node ${process.version}, ${N} elements a view, median of ${ROUNDS} rounds in turns; ms per call (awaited, then synchronize())\n`,
);
console.log(
  markdownTable(
    [{ header: 'view' }, { header: 'packed ms', align: 'right' }, { header: 'span ms', align: 'right' }, { header: 'span ÷ packed', align: 'right' }, { header: 'the rule' }, { header: 'faster' }],
    rows,
  ),
);
process.exit(0);
