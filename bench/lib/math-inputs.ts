/**
 * Inputs that test a port of a V8 `Math.*` function (src/targets/cpu/wasm/math/): the edge values of
 * its algorithm (thresholds of each branch, reduction boundaries, overflow and underflow, ±0, ±∞,
 * NaN, subnormals) each with its neighbours a few ulps away, then seeded random doubles, a mix of
 * uniform draws over the ranges where the algorithm branches and random bit patterns (every
 * exponent, subnormals, NaN payloads). Used by tests/targets/cpu/wasm/math-ports.test.ts and by the
 * proof bench/math-exhaustive.ts.
 */
import { mulberry32 } from '../../tests/random.js';

/** The functions with ports, as `Math.*` of one or two arguments. */
export const PORTED_FUNCTIONS = ['log', 'log1p', 'log2', 'log10', 'expm1', 'cbrt', 'sinh', 'cosh', 'tanh', 'pow', 'hypot'] as const;
export type PortedFunction = (typeof PORTED_FUNCTIONS)[number];

export const BINARY: ReadonlySet<PortedFunction> = new Set(['pow', 'hypot']);

/** V8's function, as the kernel calls it. */
export function reference(fn: PortedFunction): (x: number, y: number) => number {
  return BINARY.has(fn) ? (Math[fn] as (x: number, y: number) => number) : (Math[fn] as (x: number) => number);
}

const view = new DataView(new ArrayBuffer(8));

export function fromWords(hi: number, lo: number): number {
  view.setUint32(0, hi >>> 0);
  view.setUint32(4, lo >>> 0);
  return view.getFloat64(0);
}

/** x and its neighbours, `d` ulps either side (finite x; NaN and ±∞ are returned alone). */
export function around(x: number, d = 3): number[] {
  if (!Number.isFinite(x)) return [x];
  const out: number[] = [];
  for (let i = -d; i <= d; i++) {
    view.setFloat64(0, x);
    view.setBigInt64(0, view.getBigInt64(0) + BigInt(i));
    out.push(view.getFloat64(0));
  }
  return out;
}

const LN2 = Math.LN2;
const COMMON = [0, -0, Infinity, -Infinity, NaN, 1, -1, 0.5, -0.5, 2, -2, 2 ** -1074, -(2 ** -1074), 2 ** -1022, -(2 ** -1022), Number.MAX_VALUE, -Number.MAX_VALUE, fromWords(0x7ff80000, 1), fromWords(0xfff00000, 5)];
const powers = (lo: number, hi: number, step = 1) => Array.from({ length: Math.floor((hi - lo) / step) + 1 }, (_, i) => 2 ** (lo + i * step));
const signed = (xs: number[]) => xs.flatMap((x) => [x, -x]);

/** The edge values of one-argument functions. */
const EDGES: Record<Exclude<PortedFunction, 'pow' | 'hypot'>, number[]> = {
  log: [...powers(-1074, 1023, 23), Math.SQRT2, Math.SQRT1_2, 1 + 2 ** -20, 1 - 2 ** -20, 1 + 2 ** -21, fromWords(0x3ff6a09e, 0), fromWords(0x3ff6a09c, 0), fromWords(0x3fe6a09e, 0), Math.E, 10, 1e-310, 3e-320],
  log1p: [-1 + 2 ** -53, -0.75, Math.SQRT2 - 1, Math.SQRT1_2 - 1, fromWords(0x3fda827a, 0), fromWords(0xbfd2bec4, 0), 2 ** -29, -(2 ** -29), 2 ** -54, -(2 ** -54), 2 ** 53, 2 ** 52, 1e300, 2 ** -20, fromWords(0x3ff6a09e, 0) - 1, 1e-310],
  log2: [...powers(-1074, 1023, 23), Math.SQRT2, Math.SQRT1_2, 1 + 2 ** -20, 1 - 2 ** -20, 3, 1e-310],
  log10: [...Array.from({ length: 40 }, (_, i) => 10 ** (i - 20)), ...powers(-1074, 1023, 37), 1e-310, 1e308],
  expm1: [...signed([56 * LN2, 0.5 * LN2, 1.5 * LN2, 2 ** -54, 2 ** -28, 20 * LN2, 19.5 * LN2, 57 * LN2, 0.25, 1, 22, 709.782712893384, 709.7822265625, 708, 700]), fromWords(0x4043687a, 0), fromWords(0xc043687a, 0), fromWords(0x40862e42, 0xfefa39ef), fromWords(0x3fd62e42, 0xffffffff), fromWords(0x3ff0a2b2, 0), -0.25 - LN2, -40, -745, 1e-300],
  cbrt: [...powers(-1074, 1023, 23), 8, 27, -27, 1e-300, 1e300, 3, 1e-310, -1e-320, 2 ** -1070],
  sinh: [...signed([22, 2 ** -28, 1, 709.7822265625, 710.4758600739439, 710.475860073944, 709.78, 0.5 * LN2, 2 ** -55, 21.999999999999996])],
  cosh: [...signed([22, 2 ** -28, 1, 709.7822265625, 710.4758600739439, 710.475860073944, 0.5 * LN2, fromWords(0x3fd62e43, 0), 2 ** -55, fromWords(0x3c800000, 0), fromWords(0x40360000, 0), fromWords(0x40862e42, 0)])],
  tanh: [...signed([22, 2 ** -28, 1, 0.5, 20, 2 ** -55, fromWords(0x40360000, 0), fromWords(0x3ff00000, 0), fromWords(0x3e300000, 0)])],
};

/** Uniform draws over the ranges where each one-argument function branches. */
const RANGES: Record<Exclude<PortedFunction, 'pow' | 'hypot'>, [number, number][]> = {
  log: [[0, 4], [0.5, 2], [0, 1e6], [0.99, 1.01]],
  log1p: [[-1, 1], [-0.3, 0.42], [-1e-8, 1e-8], [0, 1e20]],
  log2: [[0, 4], [0.5, 2], [0, 1e6], [0.99, 1.01]],
  log10: [[0, 4], [0.5, 2], [0, 1e6], [0.99, 1.01]],
  expm1: [[-2, 2], [-40, 40], [-800, 800], [-1e-8, 1e-8]],
  cbrt: [[-10, 10], [-1e6, 1e6], [0, 1e-300], [-1, 1]],
  sinh: [[-2, 2], [-30, 30], [-720, 720], [-1e-8, 1e-8]],
  cosh: [[-2, 2], [-30, 30], [-720, 720], [-1e-8, 1e-8]],
  tanh: [[-2, 2], [-30, 30], [-1e-8, 1e-8], [-25, 25]],
};

function randomBits(next: () => number): number {
  view.setUint32(0, Math.floor(next() * 2 ** 32));
  view.setUint32(4, Math.floor(next() * 2 ** 32));
  return view.getFloat64(0);
}

/** A double with a random exponent in [−lo, hi] and random sign and mantissa. */
function logUniform(next: () => number, lo: number, hi: number): number {
  return (next() < 0.5 ? -1 : 1) * (1 + next()) * 2 ** Math.floor(-lo + next() * (lo + hi));
}

/** The edge values of a one-argument function (without neighbours). */
export function unaryCentres(fn: Exclude<PortedFunction, 'pow' | 'hypot'>): number[] {
  return [...COMMON, ...EDGES[fn]];
}

/** The edge values of a one-argument function, with their neighbours. */
export function unaryEdges(fn: Exclude<PortedFunction, 'pow' | 'hypot'>): number[] {
  return [...COMMON, ...EDGES[fn]].flatMap((x) => around(x));
}

/** Random input i (from the seeded `next`) of a one-argument function. */
export function randomUnary(fn: Exclude<PortedFunction, 'pow' | 'hypot'>, next: () => number, i: number, previous = 0): number {
  const kind = i % 8;
  if (kind < 4) {
    const [lo, hi] = RANGES[fn][kind]!;
    return lo + (hi - lo) * next();
  }
  if (kind === 4) return logUniform(next, 60, 60);
  if (kind === 5) return -previous;
  return randomBits(next);
}

/** Fills `xs` from `start` with random inputs of a one-argument function. */
export function fillUnary(fn: Exclude<PortedFunction, 'pow' | 'hypot'>, xs: Float64Array, seed: number, start = 0): void {
  const next = mulberry32(seed);
  for (let i = start; i < xs.length; i++) xs[i] = randomUnary(fn, next, i, xs[i - 1] ?? 0);
}

/** Special x and y of pow (e_pow.c's cases) and of hypot. */
export const POW_X = [...COMMON, 3, -3, 10, 0.1, 1 + 2 ** -52, 1 - 2 ** -53, 1 + 2 ** -21, 1 - 2 ** -21, 1e-310, -1e-310, 2 ** 1023, 2 ** -1022, Math.E, 1.5, fromWords(0x3ff3988e, 0), fromWords(0x3ffbb67a, 0)];
export const POW_Y = [...COMMON, 3, -3, 0.5, -0.5, 1.5, -1.5, 1 / 3, 2 ** 31, 2 ** 31 + 1, -(2 ** 31), 2 ** 53, 2 ** 53 + 2, 2 ** 52 + 1, 2 ** 64, 2 ** 65, -(2 ** 64), 1024, -1074, -1075, 1e10, 7, -7, 100, 2 ** 21 + 1, 2 ** 20 + 1];
const HYPOT = [...COMMON, 3, 4, 1e300, 1e-300, 1e154, 1e-160, 5e-324];

/** The edge pairs of pow or hypot: every special x with every special y. */
export function binaryEdges(fn: 'pow' | 'hypot'): [number, number][] {
  const xs = fn === 'pow' ? POW_X : HYPOT;
  const ys = fn === 'pow' ? POW_Y : HYPOT;
  const out: [number, number][] = [];
  for (const x of xs.flatMap((v) => around(v, 1))) for (const y of ys.flatMap((v) => around(v, 1))) out.push([x, y]);
  return out;
}

/** Random input pair i (from the seeded `next`) of pow or hypot. */
export function randomBinary(fn: 'pow' | 'hypot', next: () => number, i: number): [number, number] {
  const kind = i % 10;
  if (fn === 'hypot') {
    if (kind < 3) return [(next() - 0.5) * 20, (next() - 0.5) * 20];
    if (kind < 5) return [logUniform(next, 1074, 1023), logUniform(next, 1074, 1023)];
    if (kind < 7) {
      const x = logUniform(next, 40, 40);
      return [x, x * (1 + (next() - 0.5) * 2 ** -20)];
    }
    return [randomBits(next), randomBits(next)];
  }
  if (kind === 0) return [next() * 10, (next() - 0.5) * 100]; // ordinary
  if (kind === 1) return [(next() - 0.5) * 20, Math.round((next() - 0.5) * 120)]; // integer exponents, negative bases
  if (kind === 2) return [(next() - 0.5) * 20, Math.round((next() - 0.5) * 40) + 0.5]; // half-integers
  if (kind === 3) return [Math.round(next() * 1000), Math.round(next() * 12)]; // exact integer results
  if (kind === 4) return [1 + (next() - 0.5) * 2 ** -(20 + Math.floor(next() * 33)), logUniform(next, -20, 70)]; // x near 1, huge y
  if (kind === 5) {
    // results near the overflow and underflow thresholds: y·log2(x) near 1024 or −1075
    const x = Math.abs(logUniform(next, 30, 30));
    const target = next() < 0.5 ? 1024 : -1075;
    const y = (target + (next() - 0.5) * 4) / Math.log2(x);
    return [x, next() < 0.3 ? Math.round(y) : y];
  }
  if (kind === 6) return [logUniform(next, 1074, 1023), (next() - 0.5) * 4]; // every exponent of x, subnormals
  if (kind === 7) return [logUniform(next, 60, 60), logUniform(next, 60, 10)]; // tiny and huge exponents
  return [randomBits(next), kind === 8 ? randomBits(next) : Math.round((next() - 0.5) * 2 ** (next() * 70))];
}

/** Fills xs, ys from `start` with random inputs of pow or hypot. */
export function fillBinary(fn: 'pow' | 'hypot', xs: Float64Array, ys: Float64Array, seed: number, start = 0): void {
  const next = mulberry32(seed);
  for (let i = start; i < xs.length; i++) [xs[i], ys[i]] = randomBinary(fn, next, i);
}

/**
 * The Math functions the Wasm engine ports from V8's fdlibm code (but `exp`, which came first and has
 * its own benchmark), each with the range the benchmarks draw its inputs from (where users call it)
 * and its number of arguments: bench/math-functions.ts and bench/math-dtype-cost.ts.
 */
export const PORTED_MATH_INPUTS: Record<string, { range: [number, number]; arity: 1 | 2 }> = {
  sin: { range: [-10, 10], arity: 1 },
  cos: { range: [-10, 10], arity: 1 },
  tan: { range: [-10, 10], arity: 1 },
  asin: { range: [-1, 1], arity: 1 },
  acos: { range: [-1, 1], arity: 1 },
  atan: { range: [-10, 10], arity: 1 },
  atan2: { range: [-10, 10], arity: 2 },
  log: { range: [0, 100], arity: 1 },
  log1p: { range: [-0.5, 10], arity: 1 },
  log2: { range: [0, 100], arity: 1 },
  log10: { range: [0, 100], arity: 1 },
  expm1: { range: [-5, 5], arity: 1 },
  sinh: { range: [-5, 5], arity: 1 },
  cosh: { range: [-5, 5], arity: 1 },
  tanh: { range: [-5, 5], arity: 1 },
  cbrt: { range: [-100, 100], arity: 1 },
  pow: { range: [0, 4], arity: 2 },
  hypot: { range: [-10, 10], arity: 2 },
};

/** `n` deterministic inputs uniform over `[lo, hi)` (Mulberry32 from `seed`), the same on every run. */
export function uniformInputs(n: number, [lo, hi]: [number, number], seed: number): Float64Array {
  const next = mulberry32(seed);
  const xs = new Float64Array(n);
  for (let i = 0; i < n; i++) xs[i] = lo + (hi - lo) * next();
  return xs;
}
