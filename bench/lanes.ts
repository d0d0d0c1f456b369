/**
 * Kernels that exercise the Wasm engine's lanes beyond 32-bit floats — 8/16-bit integers, float ↔
 * integer conversions, float64, per-row loops whose trip count differs per row (masked) — and
 * float32 on the JS engine, each timed on:
 *   - the default engine choice (`auto`), and the Wasm engine forced (`wasm`), on arrays in Wasm
 *     memory (`sharedArray`) and on ordinary typed arrays;
 *   - the JS engine (`js`);
 *   - a hand-written JS loop doing the same work (the peer users would write without the library).
 *
 *   npx tsx bench/lanes.ts [--quick] [--size N] [--kernels int16-sat,uint8-gamma,…] [--json FILE]
 *
 * An A/B of an engine change: run this file from two checkouts, alternating, in one session
 * (bench/results/lanes-*.md says how each figure there was taken).
 */
import { writeFileSync } from 'node:fs';
import { setEngineMode } from '../src/targets/cpu/wasm/index.js';
import { type DType, guvectorize, sharedArray, vectorize } from '../src/index.js';
import { formatSeconds } from './lib/format.js';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const chosen = flag('--kernels')?.split(',');
const jsonFile = flag('--json');
const N = Number(flag('--size') ?? (quick ? 1 << 18 : 1 << 22));

type Arrays = ArrayLike<number>[];
interface LaneKernel {
  readonly name: string;
  readonly signature: string;
  readonly kernel: (...xs: number[]) => number;
  /** The same work as a plain JS loop over the arrays (inputs, then the output). */
  readonly loop: (arrays: Arrays, n: number) => void;
  /** Input values for element i of operand k. */
  readonly value: (k: number, i: number) => number;
}

const KERNELS: LaneKernel[] = [
  {
    name: 'int16-sat',
    signature: 'int16(int16, int16)',
    kernel: (a, b) => Math.min(Math.max(a + b, -32768), 32767),
    loop: ([a, b, o], n) => {
      const x = a as Int16Array, y = b as Int16Array, z = o as Int16Array;
      for (let i = 0; i < n; i++) z[i] = Math.min(Math.max(x[i]! + y[i]!, -32768), 32767);
    },
    value: (k, i) => ((i * (k ? 7919 : 104729)) % 65536) - 32768,
  },
  {
    name: 'uint8-add-sat',
    signature: 'uint8(uint8, uint8)',
    kernel: (a, b) => Math.min(a + b, 255),
    loop: ([a, b, o], n) => {
      const x = a as Uint8Array, y = b as Uint8Array, z = o as Uint8Array;
      for (let i = 0; i < n; i++) z[i] = Math.min(x[i]! + y[i]!, 255);
    },
    value: (k, i) => (i * (k ? 37 : 101)) % 256,
  },
  {
    name: 'uint8-gamma',
    signature: 'uint8(uint8, float64)',
    kernel: (x, g) => Math.min(Math.floor(255 * (x / 255) ** g), 255),
    loop: ([a, b, o], n) => {
      const x = a as Uint8Array, g = (b as Float64Array)[0]!, z = o as Uint8Array;
      for (let i = 0; i < n; i++) z[i] = Math.min(Math.floor(255 * (x[i]! / 255) ** g), 255);
    },
    value: (k, i) => (k ? 0.45 : (i * 37) % 256),
  },
  {
    name: 'uint8-sqrt-curve',
    signature: 'uint8(uint8, float64)',
    kernel: (x, g) => Math.min(Math.floor(255 * Math.sqrt(x / 255) * g), 255),
    loop: ([a, b, o], n) => {
      const x = a as Uint8Array, g = (b as Float64Array)[0]!, z = o as Uint8Array;
      for (let i = 0; i < n; i++) z[i] = Math.min(Math.floor(255 * Math.sqrt(x[i]! / 255) * g), 255);
    },
    value: (k, i) => (k ? 1.1 : (i * 37) % 256),
  },
  {
    name: 'uint8-to-float32',
    signature: 'float32(uint8)',
    kernel: (x) => x / 255 - 0.5,
    loop: ([a, o], n) => {
      const x = a as Uint8Array, z = o as Float32Array;
      for (let i = 0; i < n; i++) z[i] = x[i]! / 255 - 0.5;
    },
    value: (_, i) => (i * 37) % 256,
  },
  {
    name: 'float32-to-uint8c',
    signature: 'uint8c(float32)',
    kernel: (x) => x * 255,
    loop: ([a, o], n) => {
      const x = a as Float32Array, z = o as Uint8ClampedArray;
      for (let i = 0; i < n; i++) z[i] = x[i]! * 255;
    },
    value: (_, i) => ((i % 1000) - 100) / 800,
  },
  {
    name: 'poly5-float64',
    signature: 'float64(float64)',
    kernel: (x) => ((((0.5 * x + 1.25) * x - 2.5) * x + 0.75) * x - 1.5) * x + 3,
    loop: ([a, o], n) => {
      const x = a as Float64Array, z = o as Float64Array;
      for (let i = 0; i < n; i++) {
        const v = x[i]!;
        z[i] = ((((0.5 * v + 1.25) * v - 2.5) * v + 0.75) * v - 1.5) * v + 3;
      }
    },
    value: (_, i) => (i % 1000) / 500 - 1,
  },
  {
    name: 'poly5-float32',
    signature: 'float32(float32)',
    kernel: (x) => ((((0.5 * x + 1.25) * x - 2.5) * x + 0.75) * x - 1.5) * x + 3,
    loop: ([a, o], n) => {
      const x = a as Float32Array, z = o as Float32Array;
      for (let i = 0; i < n; i++) {
        const v = x[i]!;
        z[i] = ((((0.5 * v + 1.25) * v - 2.5) * v + 0.75) * v - 1.5) * v + 3;
      }
    },
    value: (_, i) => (i % 1000) / 500 - 1,
  },
];

function typesOf(signature: string): { params: DType[]; ret: DType } {
  const open = signature.indexOf('(');
  return { ret: signature.slice(0, open) as DType, params: signature.slice(open + 1, -1).split(',').map((t) => t.trim() as DType) };
}

const ARRAY_TYPES: Record<string, new (n: number) => ArrayLike<number>> = {
  int8: Int8Array, uint8: Uint8Array, uint8c: Uint8ClampedArray, int16: Int16Array, uint16: Uint16Array,
  int32: Int32Array, uint32: Uint32Array, float32: Float32Array, float64: Float64Array,
};

/** Median milliseconds of `run` over 7 samples after 2 warm-up calls. */
function time(run: () => void): number {
  for (let w = 0; w < 2; w++) run();
  const samples: number[] = [];
  for (let s = 0; s < (quick ? 5 : 7); s++) {
    const t0 = performance.now();
    run();
    samples.push(performance.now() - t0);
  }
  return median(samples);
}

const table: string[][] = [];
const json: Record<string, Record<string, number | string>> = {};
for (const k of KERNELS) {
  if (chosen && !chosen.includes(k.name)) continue;
  const { params, ret } = typesOf(k.signature);
  const make = (shared: boolean) => {
    const arrays = params.map((t, p) => {
      // A float64 parameter beside a narrow one is a scalar (the gamma): one element, broadcast.
      const n = p > 0 && t === 'float64' && params[0] !== 'float64' ? 1 : N;
      const a = (shared ? sharedArray(n, t as never) : new ARRAY_TYPES[t]!(n)) as unknown as number[];
      for (let i = 0; i < n; i++) a[i] = k.value(p, i);
      return a as unknown as ArrayLike<number>;
    });
    const out = (shared ? sharedArray(N, ret as never) : new ARRAY_TYPES[ret]!(N)) as ArrayLike<number>;
    return { arrays, out };
  };
  const f = vectorize([k.signature])(k.kernel);
  const result: Record<string, number | string> = {};
  const measure = (label: string, mode: 'auto' | 'wasm' | 'js', shared: boolean) => {
    const { arrays, out } = make(shared);
    setEngineMode(mode);
    const call = () => f.sync(...arrays, { out } as never);
    result[label] = time(call);
    if (mode !== 'js') result[`${label} engine`] = f.explain(...arrays, { out } as never).replace(/\).*$/, ')');
  };
  // The first configuration measured would also pay for the JIT tiers of the library's call path.
  for (let w = 0; w < 2; w++) measure('auto, Wasm memory', 'auto', true);
  measure('wasm, Wasm memory', 'wasm', true);
  measure('auto, ordinary arrays', 'auto', false);
  measure('js engine', 'js', false);
  const plain = make(false);
  result['plain JS loop'] = time(() => k.loop([...plain.arrays, plain.out], N));
  setEngineMode('auto');
  json[k.name] = result;
  const ms = (x: number | string) => formatSeconds((x as number) / 1e3);
  table.push([
    `${k.name} \`${k.signature}\``,
    `${ms(result['auto, Wasm memory']!)} (${result['auto, Wasm memory engine']})`,
    ms(result['wasm, Wasm memory']!),
    `${ms(result['auto, ordinary arrays']!)}`,
    ms(result['js engine']!),
    ms(result['plain JS loop']!),
  ]);
}

type Row = { [i: number]: number; length: number };
/** Per-row kernels whose loops run a different number of times per row: N / 16 rows of 16. */
const ROW_KERNELS: { name: string; signature: string; layout: string; kernel: (...a: never[]) => void; loop: (x: Float32Array, t: Float32Array, out: Float32Array, rows: number, n: number) => void }[] = [
  {
    name: 'first-above (break per row)',
    signature: 'void(float32[:], float32, float32[:])',
    layout: '(n),()->()',
    kernel: ((x: Row, t: number, out: Row) => {
      let idx = -1;
      for (let i = 0; i < x.length; i++) {
        if (x[i]! > t) {
          idx = i;
          break;
        }
      }
      out[0] = idx;
    }) as never,
    loop: (x, t, out, rows, n) => {
      for (let r = 0; r < rows; r++) {
        let idx = -1;
        for (let i = 0; i < n; i++) {
          if (x[r * n + i]! > t[r]!) {
            idx = i;
            break;
          }
        }
        out[r] = idx;
      }
    },
  },
  {
    name: 'newton-sqrt (while per element)',
    signature: 'void(float32[:], float32, float32[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Row, t: number, out: Row) => {
      for (let i = 0; i < x.length; i++) {
        const a = x[i]! + t;
        let y = a;
        let c = y * 0;
        while (Math.abs(y * y - a) > 1e-3 * a && c < 30) {
          y = 0.5 * (y + a / y);
          c += 1;
        }
        out[i] = y;
      }
    }) as never,
    loop: (x, t, out, rows, n) => {
      const f = Math.fround;
      for (let r = 0; r < rows; r++) {
        for (let i = 0; i < n; i++) {
          const a = f(x[r * n + i]! + t[r]!);
          let y = a;
          let c = f(y * 0);
          while (Math.abs(f(f(y * y) - a)) > f(f(1e-3) * a) && c < 30) {
            y = f(f(0.5) * f(y + f(a / y)));
            c = f(c + 1);
          }
          out[r * n + i] = y;
        }
      }
    },
  },
];
for (const k of ROW_KERNELS) {
  if (chosen && !chosen.includes(k.name.split(' ')[0]!)) continue;
  const n = 16;
  const rows = N / n;
  const perRowOut = k.layout.endsWith('->()');
  const make = (shared: boolean) => {
    const alloc = (len: number) => (shared ? sharedArray(len, 'float32') : new Float32Array(len));
    const x = alloc(rows * n);
    for (let i = 0; i < x.length; i++) x[i] = ((i * 7919) % 1000) / 100;
    const t = alloc(rows);
    for (let r = 0; r < rows; r++) t[r] = ((r * 104729) % 1000) / 100;
    const out = alloc(perRowOut ? rows : rows * n);
    return { x: { data: x, shape: [rows, n] }, t, out: perRowOut ? out : { data: out, shape: [rows, n] }, raw: [x, t, out] as const };
  };
  const f = guvectorize([k.signature], k.layout)(k.kernel);
  const result: Record<string, number | string> = {};
  const measure = (label: string, mode: 'auto' | 'wasm' | 'js', shared: boolean) => {
    const a = make(shared);
    setEngineMode(mode);
    result[label] = time(() => f.sync(a.x, a.t, { out: a.out } as never));
    if (mode !== 'js') result[`${label} engine`] = f.explain(a.x, a.t, { out: a.out } as never).replace(/\).*$/, ')').replace(/;.*$/, ')');
  };
  for (let w = 0; w < 2; w++) measure('auto, Wasm memory', 'auto', true);
  measure('wasm, Wasm memory', 'wasm', true);
  measure('auto, ordinary arrays', 'auto', false);
  measure('js engine', 'js', false);
  const plain = make(false);
  result['plain JS loop'] = time(() => k.loop(plain.raw[0], plain.raw[1], plain.raw[2], rows, n));
  setEngineMode('auto');
  json[k.name] = result;
  const ms = (x: number | string) => formatSeconds((x as number) / 1e3);
  table.push([
    `${k.name} \`${k.layout}\``,
    `${ms(result['auto, Wasm memory']!)} (${result['auto, Wasm memory engine']})`,
    ms(result['wasm, Wasm memory']!),
    ms(result['auto, ordinary arrays']!),
    ms(result['js engine']!),
    ms(result['plain JS loop']!),
  ]);
}
console.log(`${N.toLocaleString('en-US')} elements, median of ${quick ? 5 : 7}\n`);
const header = ['kernel', 'auto, Wasm memory (engine)', 'Wasm forced', 'auto, ordinary arrays', 'JS engine', 'plain JS loop'];
console.log(markdownTable(header.map((h, i) => ({ header: h, align: i ? 'right' : 'left' }) as const), table));
if (jsonFile) writeFileSync(jsonFile, JSON.stringify({ elements: N, kernels: json }, null, 1));
