/**
 * Inputs for the checks of the Wasm ports of `Math` functions against V8's (the tests, and the
 * proofs bench/math-exhaustive.ts …): doubles by their words, neighbours by ulps, edge values in
 * every lane beside ordinary ones, and random and edge inputs per function.
 */

export function fromWords(hi: number, lo: number): number {
  const v = new DataView(new ArrayBuffer(8));
  v.setUint32(0, hi >>> 0);
  v.setUint32(4, lo >>> 0);
  return v.getFloat64(0);
}

/** The double `d` ulps from x (through zero to the other sign, as the bit patterns run). */
export function ulpsFrom(x: number, d: number): number {
  const v = new DataView(new ArrayBuffer(8));
  v.setFloat64(0, x);
  let bits = v.getBigInt64(0);
  // Bit patterns of negative numbers run the other way: work on |x| and keep the sign.
  const negative = bits < 0n;
  if (negative) bits &= 0x7fffffffffffffffn;
  let n = bits + BigInt(negative ? -d : d);
  const flip = n < 0n;
  if (flip) n = -n;
  v.setBigInt64(0, n | (negative !== flip ? -0x8000000000000000n : 0n));
  return v.getFloat64(0);
}

/** The float32 `d` ulps from x (x a float32). */
export function ulpsFrom32(x: number, d: number): number {
  const v = new DataView(new ArrayBuffer(4));
  v.setFloat32(0, x);
  const bits = v.getInt32(0);
  const negative = bits < 0;
  let n = (bits & 0x7fffffff) + (negative ? -d : d);
  const flip = n < 0;
  if (flip) n = -n;
  v.setUint32(0, (n | (negative !== flip ? 0x80000000 : 0)) >>> 0);
  return v.getFloat32(0);
}

/** Same bits, or both NaN (NaN payloads are not part of the claim). */
export const same = (a: number, b: number) => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

/**
 * Every value within `width` ulps of each centre and of its negation, plus ±0, ±∞ and NaN, each
 * one placed in every lane of a `lanes`-lane vector whose other lanes hold ordinary inputs, then
 * whole vectors of them.
 */
export function edgeInputs(
  width: number, lanes: number, round: (x: number) => number, step: (x: number, d: number) => number, centres: readonly number[],
): number[] {
  const edges = new Set<number>([0, -0, Infinity, -Infinity, NaN]);
  for (const c of centres) {
    for (const centre of [round(c), round(-c)]) {
      for (let d = -width; d <= width; d++) edges.add(step(centre, d));
    }
  }
  const out: number[] = [];
  const ordinary = [0.7, -3.25, 12.5, -0.3];
  for (const x of edges) {
    for (let lane = 0; lane < lanes; lane++) {
      for (let l = 0; l < lanes; l++) out.push(l === lane ? x : round(ordinary[l]!));
    }
  }
  for (const x of edges) out.push(x);
  return out;
}


/** A random double from its 64 bits: every exponent, both signs, NaN payloads. */
export function randomBits(next: () => number): number {
  const v = new DataView(new ArrayBuffer(8));
  v.setUint32(0, Math.floor(next() * 2 ** 32));
  v.setUint32(4, Math.floor(next() * 2 ** 32));
  return v.getFloat64(0);
}

/** ±2^e with e uniform in [lo, hi) and a random mantissa. */
export function logUniform(next: () => number, lo: number, hi: number): number {
  return (next() < 0.5 ? -1 : 1) * 2 ** (lo + (hi - lo) * next());
}

/**
 * Where sin, cos and tan change course (fdlibm's thresholds on the high word of |x|: 2^-28,
 * 2^-27, 0.3, 0.6744, π/4, 0.78125, 3π/4, π/2's high word, 2^19·π/2), multiples of π/2 (the
 * reduction's cancellations), the largest doubles and the hardest known case for reduction.
 */
export const TRIG_CENTRES: readonly number[] = [
  2 ** -28, 2 ** -27, fromWords(0x3fd33333, 0), fromWords(0x3fe59428, 0), fromWords(0x3fe921fb, 0xffffffff), fromWords(0x3fe921fc, 0),
  Math.PI / 4, 0.78125, fromWords(0x3fe90001, 0), fromWords(0x4002d97c, 0), 3 * Math.PI / 4, fromWords(0x3ff921fb, 0), fromWords(0x3ff921fc, 0),
  fromWords(0x413921fb, 0xffffffff), fromWords(0x413921fc, 0), 2 ** 19 * Math.PI / 2,
  ...Array.from({ length: 40 }, (_, n) => (n + 1) * (Math.PI / 2)), 1e6 * Math.PI, 2 ** 20 * Math.PI,
  6381956970095103 * 2 ** 797, Number.MAX_VALUE, 2 ** -1022, 2 ** -1074, 1, 1e22, 1e300,
];

/** Random inputs for sin, cos and tan: every range of the reduction, near-multiples of π/2, any bits. */
export function trigInput(next: () => number, i: number): number {
  switch (i % 6) {
    case 0: return (next() - 0.5) * 20;
    case 1: return (next() - 0.5) * 2e6; // the medium reduction and just past it
    case 2: {
      // within a few ulps of n·π/2, where the reduction cancels
      const n = Math.floor(next() * 2 ** (1 + 20 * next()));
      return ulpsFrom((next() < 0.5 ? -n : n) * (Math.PI / 2), Math.floor(next() * 9) - 4);
    }
    case 3: return randomBits(next);
    case 4: return logUniform(next, -30, 1024);
    default: return logUniform(next, -1075, 0);
  }
}

/** Where asin and acos change course: 2^-57, 2^-27, 0.5, 0.975 (by the high word), ±1, beyond 1. */
export const ASIN_CENTRES: readonly number[] = [
  fromWords(0x3c600000, 0), fromWords(0x3c600001, 0), 2 ** -27, 0.5, fromWords(0x3fef3333, 0), 0.975, 1, 1.5, 0.25, 0.75,
  2 ** -1022, 2 ** -1074, Number.MAX_VALUE,
];

/** Random inputs for asin and acos: the whole domain, near ±1 and ±0.5, tiny, just outside, any bits. */
export function asinInput(next: () => number, i: number): number {
  switch (i % 5) {
    case 0: return 2 * next() - 1;
    case 1: return (next() < 0.5 ? -1 : 1) * (1 - 2 ** (-60 * next())); // toward ±1
    case 2: return logUniform(next, -1075, 0);
    case 3: return (next() < 0.5 ? -1 : 1) * (0.5 + (next() - 0.5) * 2 ** (-40 * next()));
    default: return next() < 0.5 ? randomBits(next) : (next() < 0.5 ? -1 : 1) * (1 + 2 ** (-60 * next()));
  }
}

/** Where atan changes course: 2^-27, 7/16, 11/16, 19/16, 39/16, 2^66, and the extremes. */
export const ATAN_CENTRES: readonly number[] = [
  2 ** -27, 0.4375, 0.6875, 1.1875, 2.4375, 2 ** 66, 1, 0.5, 1.5, 2 ** 60, 2 ** -1022, 2 ** -1074, Number.MAX_VALUE,
];

/** Random inputs for atan: every reduction, every exponent, any bits. */
export function atanInput(next: () => number, i: number): number {
  switch (i % 4) {
    case 0: return (next() - 0.5) * 8;
    case 1: return logUniform(next, -40, 80);
    case 2: return randomBits(next);
    default: return logUniform(next, -1075, 1024);
  }
}

/** Special values for atan2 pairs: zeros, infinities, NaN, ±1 and ordinary, tiny and huge values. */
export const ATAN2_SPECIALS: readonly number[] = [0, -0, Infinity, -Infinity, NaN, 1, -1, 2.5, -0.75, 2 ** -1074, -(2 ** -1074), 1e300, -1e300, 2 ** 61, 2 ** -61];

/** Random [y, x] pairs for atan2: every quadrant, exponent differences around ±60, x = 1, special values, any bits. */
export function atan2Input(next: () => number, i: number): [number, number] {
  const special = () => ATAN2_SPECIALS[Math.floor(next() * ATAN2_SPECIALS.length)]!;
  switch (i % 7) {
    case 0: return [(next() - 0.5) * 20, (next() - 0.5) * 20];
    case 1: {
      // exponents differing by up to ±70 (fdlibm's limits at 60)
      const x = logUniform(next, -20, 20);
      return [x * logUniform(next, -70, 70), x];
    }
    case 2: return [logUniform(next, -1075, 1024), logUniform(next, -1075, 1024)];
    case 3: return [randomBits(next), randomBits(next)];
    case 4: return [logUniform(next, -80, 80), next() < 0.5 ? 1 : -1];
    case 5: return next() < 0.5 ? [special(), logUniform(next, -30, 30)] : [logUniform(next, -30, 30), special()];
    default: return [special(), special()];
  }
}
