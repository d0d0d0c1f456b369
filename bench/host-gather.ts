/**
 * The host side of a gpu call on sparse host views: gathering a strided input's elements into the
 * device layout (what goes into mapped staging memory) and scattering results back into the
 * caller's view (src/targets/gpu/runtime/host-operands.ts), in GB/s of the view's elements, for
 * element types of 1, 2 and 4 bytes and several layouts — A/B between this checkout and a base
 * checkout in one process, sides timed in turns sample by sample; views placed as this checkout
 * places an output (packed unless dense), so that the sparse ones are gathered and scattered.
 * Also, for every-k-th-element views, the copy of the covering span (what a call uploads when it
 * places an input as it is, `span`, the kernel reading it strided) beside the gather (`packed`):
 * the host's side of placeHostOperand's rule (bench/host-placement.ts times whole calls).
 *
 *   git archive main src package.json tsconfig.json | (mkdir -p /tmp/base && tar -x -C /tmp/base)
 *   ln -s $PWD/node_modules /tmp/base/node_modules
 *   npx tsx bench/host-gather.ts --base /tmp/base [--quick] [--log2 24] [--rounds 7]
 *   npx tsx bench/host-gather.ts              # base: main a446b7c's loops (bench/lib/host-gather-base.ts)
 *
 * Each side's gathered and scattered elements are checked bit for bit against a plain loop over
 * unsigned words (the data holds float32 signalling NaNs): this checkout must match; a base that
 * does not is named in the table.
 * Prints each row as it is measured, then the table.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';

const argv = process.argv.slice(2);
const flag = (name: string): string | undefined => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const quick = argv.includes('--quick');
const log2 = Number(flag('--log2') ?? (quick ? 20 : 24));
const rounds = Number(flag('--rounds') ?? (quick ? 3 : 7));
const baseDir = flag('--base');
const N = 2 ** log2;

type TypedArray = Uint8Array | Int16Array | Float32Array | Uint32Array;
interface Placement {
  readonly mode: 'span' | 'packed';
  readonly length: number;
  readonly low: number;
  readonly high: number;
  readonly data: TypedArray;
}
interface Side {
  readonly name: string;
  placeHostOperand(view: object, loopShape: readonly number[], role: 'input' | 'output'): Placement;
  gatherInto(p: Placement, into: TypedArray, from: number): void;
  scatterResults(p: Placement, fromDevice: TypedArray): void;
}

async function load(name: string, dir: string): Promise<Side> {
  const m = await import(pathToFileURL(resolve(dir, 'src/targets/gpu/runtime/host-operands.ts')).href);
  return { name, placeHostOperand: m.placeHostOperand, gatherInto: m.gatherInto, scatterResults: m.scatterResults };
}
/** The baseline: a base checkout's functions, or main a446b7c's loops kept in bench/lib (with placements from this checkout). */
async function baseline(): Promise<Side> {
  if (baseDir) return load('base', baseDir);
  const loops = await import('./lib/host-gather-base.js');
  const here = await load('base', '.');
  return { name: 'base', placeHostOperand: here.placeHostOperand, gatherInto: loops.gatherInto as never, scatterResults: loops.scatterResults as never };
}
const sides = [await load('new', '.'), await baseline()];

type Ctor = new (n: number) => TypedArray;
interface Case {
  readonly name: string;
  readonly type: Ctor;
  /** Elements of the host array. */
  readonly hostLength: number;
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly offset: number;
}
const DTYPE = new Map<Ctor, string>([[Uint8Array, 'uint8'], [Int16Array, 'int16'], [Float32Array, 'float32']]);
const cases: Case[] = [];
for (const type of [Float32Array, Int16Array, Uint8Array] as Ctor[]) {
  cases.push({ name: `${DTYPE.get(type)} every 3rd`, type, hostLength: 3 * N, shape: [N], strides: [3], offset: 0 });
}
cases.push({ name: 'float32 every 3rd, backwards', type: Float32Array, hostLength: 3 * N, shape: [N], strides: [-3], offset: 3 * N - 1 });
const side = 2 ** Math.floor(log2 / 2);
cases.push({ name: `float32 columns 1…2 of ${N / 2}×5 rows`, type: Float32Array, hostLength: (N / 2) * 5, shape: [N / 2, 2], strides: [5, 1], offset: 1 });
cases.push({ name: `float32 left half of ${side}×${2 * side} (rows of ${side})`, type: Float32Array, hostLength: side * side * 2, shape: [side, side], strides: [2 * side, 1], offset: 0 });
cases.push({ name: `float32 transposed ${side}² (column walk)`, type: Float32Array, hostLength: side * side, shape: [side, side], strides: [1, side], offset: 0 });
// Sparser views, to compare the gather with the span copy.
for (const k of [2, 4, 8, 16]) cases.push({ name: `float32 every ${k}${k === 2 ? 'nd' : 'th'}`, type: Float32Array, hostLength: k * N, shape: [N], strides: [k], offset: 0 });

function viewOf(c: Case, data: TypedArray): object {
  return { data, dtype: DTYPE.get(c.type), offset: c.offset, loopStrides: c.strides, coreStrides: [], coreShape: [] };
}

/** The view's elements in C order, by a plain loop over unsigned words (the oracle: a Float32Array load would quiet signalling NaNs). */
function expected(c: Case, elements: TypedArray): TypedArray {
  const result = new c.type(c.shape.reduce((a, b) => a * b, 1));
  const Words = { 1: Uint8Array, 2: Uint16Array, 4: Uint32Array }[elements.BYTES_PER_ELEMENT as 1 | 2 | 4];
  const data = new Words(elements.buffer as ArrayBuffer, elements.byteOffset, elements.length);
  const out = new Words(result.buffer as ArrayBuffer, result.byteOffset, result.length);
  let k = 0;
  const walk = (d: number, at: number) => {
    if (d === c.shape.length) {
      out[k++] = data[at]!;
      return;
    }
    for (let i = 0; i < c.shape[d]!; i++) walk(d + 1, at + i * c.strides[d]!);
  };
  if (c.shape.length === 2 && c.strides[1] === 1) {
    for (let i = 0; i < c.shape[0]!; i++) out.set(data.subarray(c.offset + i * c.strides[0]!, c.offset + i * c.strides[0]! + c.shape[1]!), i * c.shape[1]!);
  } else if (c.shape.length === 1) {
    for (let i = 0, at = c.offset; i < c.shape[0]!; i++, at += c.strides[0]!) out[i] = data[at]!;
  } else {
    walk(0, c.offset);
  }
  return result;
}

function sameBits(a: TypedArray, b: TypedArray): boolean {
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

/**
 * Seconds of the process's CPU time per call over calls lasting ≥ 50 ms of it (≥ 2 calls): on a
 * loaded machine CPU time moves less than wall time.
 */
function sample(fn: () => void): number {
  const cpu = () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  };
  const t0 = cpu();
  let calls = 0;
  do {
    fn();
    calls++;
  } while (calls < 2 || cpu() - t0 < 50);
  return (cpu() - t0) / 1000 / calls;
}

interface Row {
  readonly name: string;
  readonly mode: string;
  readonly bytes: number;
  readonly gather: Map<string, number>;
  readonly scatter: Map<string, number>;
  readonly span?: number;
  readonly wrong: readonly string[];
}
const rows: Row[] = [];
const gbps = (bytes: number, seconds: number | undefined) => (seconds === undefined ? '' : (bytes / seconds / 1e9).toFixed(2));

for (const c of cases) {
  const data = new c.type(c.hostLength);
  const bytes32 = new Uint32Array(data.buffer);
  for (let i = 0; i < bytes32.length; i++) bytes32[i] = Math.imul(i, 2654435761) ^ 0x7f800001; // float32 signalling NaNs among them
  const want = expected(c, data);
  // Placed as an output is (packed unless dense: so a sparse view is gathered and scattered), by
  // this checkout's rule for both sides: the same device layout, the loops compared.
  const placement = sides[0]!.placeHostOperand(viewOf(c, data), c.shape, 'output');
  const placements = sides.map(() => placement);
  const mode = placements[0]!.mode;
  const into = new c.type(placements[0]!.length);
  const results = new c.type(placements[0]!.length);
  const outHost = new c.type(c.hostLength);
  // The device elements of the placement: packed = the view's elements; span = the covering span.
  const device = mode === 'packed' ? want : data.slice(placements[0]!.low, placements[0]!.high + 1);
  /** Sides whose elements differ from the oracle's (a base that quiets signalling NaNs). */
  const wrong: string[] = [];
  for (const [k, s] of sides.entries()) {
    if (mode === 'packed') {
      into.fill(0);
      s.gatherInto(placements[k]!, into, 0);
      if (!sameBits(into, want)) wrong.push(`${s.name} gather`);
    }
    outHost.fill(0);
    s.scatterResults({ ...placements[k]!, data: outHost }, device);
    if (!sameBits(expected(c, outHost), want)) wrong.push(`${s.name} scatter`);
  }
  if (wrong.includes('new gather') || wrong.includes('new scatter')) throw new Error(`${c.name}: this checkout's elements differ from a plain loop's (${wrong.join(', ')})`);
  const gather = new Map<string, number[]>(sides.map((s) => [s.name, []]));
  const scatter = new Map<string, number[]>(sides.map((s) => [s.name, []]));
  const spans: number[] = [];
  const low = Math.min(c.offset, c.offset + (c.shape[0]! - 1) * c.strides[0]!);
  const spanBytes = new c.type(placements[0]!.high - placements[0]!.low + 1);
  for (let r = 0; r < rounds; r++) {
    for (const [k, s] of sides.entries()) {
      const p = placements[k]!;
      if (mode === 'packed') gather.get(s.name)!.push(sample(() => s.gatherInto(p, into, 0)));
      const target = { ...p, data: outHost };
      scatter.get(s.name)!.push(sample(() => s.scatterResults(target, device)));
    }
    if (c.shape.length === 1) spans.push(sample(() => spanBytes.set(data.subarray(low, low + spanBytes.length))));
  }
  const bytes = want.byteLength;
  const row: Row = {
    name: c.name, mode, bytes,
    gather: new Map([...gather].filter(([, v]) => v.length > 0).map(([k, v]) => [k, median(v)])),
    scatter: new Map([...scatter].map(([k, v]) => [k, median(v)])),
    ...(spans.length ? { span: median(spans) } : {}),
    wrong,
  };
  rows.push(row);
  console.log(`${c.name} (${mode}): ${sides.map((s) => `${s.name} gather ${gbps(bytes, row.gather.get(s.name))} scatter ${gbps(bytes, row.scatter.get(s.name))} GB/s`).join(', ')}${row.span !== undefined ? `; span copy ${gbps(bytes, row.span)} GB/s of the view's elements` : ''}`);
}

const headers = [
  'view', 'placement', 'MiB',
  ...sides.map((s) => `gather ${s.name} GB/s`), 'gather new ÷ base time',
  ...sides.map((s) => `scatter ${s.name} GB/s`), 'scatter new ÷ base time',
  'span copy GB/s', 'not bit for bit',
];
const ratio = (m: Map<string, number>) => (m.has('new') && m.has('base') ? `${(m.get('new')! / m.get('base')!).toFixed(2)}×` : '');
console.log(`\n# Host gather and scatter (bench/host-gather.ts${quick ? ' --quick' : ''}), 2^${log2} elements a view, median of ${rounds} rounds, sides in turns; base: ${baseDir ?? "main a446b7c's loops (bench/lib/host-gather-base.ts)"}\n`);
console.log(`GB/s of the view's elements per second of CPU time; the span copy is a set() of the covering span (what a \`span\` placement uploads).\n`);
console.log(
  markdownTable(
    headers.map((header, i) => ({ header, ...(i > 1 ? { align: 'right' as const } : {}) })),
    rows.map((r) => [
      r.name, r.mode, (r.bytes / 2 ** 20).toFixed(0),
      ...sides.map((s) => gbps(r.bytes, r.gather.get(s.name))), ratio(r.gather),
      ...sides.map((s) => gbps(r.bytes, r.scatter.get(s.name))), ratio(r.scatter),
      gbps(r.bytes, r.span), r.wrong.join(', '),
    ]),
  ),
);
