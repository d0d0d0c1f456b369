/**
 * WGSL functions that give JS semantics where WGSL's built-ins differ, emitted into a module only
 * when its code calls them.
 *
 * Where WGSL and JS part ways (WGSL §15.7 "Floating Point Evaluation", §8.7 "Arithmetic
 * Expressions", and JS's Number semantics):
 * - float → int: WGSL clamps (`i32(1e20)` is 2147483520) and leaves NaN indeterminate; JS's
 *   ToInt32 truncates, wraps modulo 2³², and maps NaN and ±Infinity to 0 → `js_f32_to_i32`.
 * - `%` on floats: WGSL computes `x - y * trunc(x / y)`, which rounds; JS's is IEEE fmod, exact →
 *   `js_fmod`, on the bits.
 * - `%` on integers: WGSL gives 0 for `x % 0`; JS gives NaN, which `| 0` makes 0 — the same, but
 *   `i32.min % -1` is defined here explicitly → `js_irem`, `js_urem`.
 * - `(a / b) | 0` on integers: exact integer division with 0 for a zero divisor → `js_idiv_*`.
 * - `Math.round` rounds half up (toward +∞) and keeps the sign of zero; WGSL's `round` rounds half
 *   to even → `js_round`.
 * - `Math.min/max` propagate NaN and order −0 below +0; WGSL leaves both open → `js_min/js_max`.
 * - `Math.sign`, `Math.pow`, `Math.atan2`, `Math.hypot`, the logarithms and inverse functions:
 *   JS defines every special value (NaN, ±0, ±Infinity, out of domain); WGSL leaves them
 *   indeterminate or inherits them from a formula → explicit cases before the built-in.
 *
 * NaN and ±Infinity tests look at the bits: WGSL allows an implementation to assume there are no
 * NaNs or infinities (§15.7.2, "Finite Math Assumption") and fold `x != x` to false.
 */

/** Names of the support functions; the namer reserves every one. */
export const SUPPORT_NAMES = [
  'js_nan', 'js_inf', 'js_special_bits', 'js_is_nan', 'js_is_inf', 'js_is_finite', 'js_f32_to_i32', 'js_f32_to_bool', 'js_f32_to_u8c',
  'js_fmod', 'js_irem', 'js_urem', 'js_irem_index', 'js_idiv', 'js_imag', 'js_idiv_ii', 'js_idiv_iu',
  'js_idiv_ui', 'js_idiv_uu', 'js_sign', 'js_round', 'js_min', 'js_max', 'js_sqrt', 'js_cbrt', 'js_log',
  'js_log2', 'js_log10', 'js_log1p', 'js_expm1', 'js_asin', 'js_acos', 'js_sinh', 'js_tanh', 'js_asinh',
  'js_acosh', 'js_atanh', 'js_atan2', 'js_pow', 'js_hypot', 'js_copysign', 'js_opaque', 'js_hide',
  'js_rng', 'js_mulhi', 'js_random_f32',
] as const;
export type SupportName = (typeof SUPPORT_NAMES)[number];

interface SupportFunction {
  readonly deps: readonly SupportName[];
  readonly code: string;
}

const SUPPORT: Readonly<Record<SupportName, SupportFunction>> = {
  // Bit patterns in a private variable, not literals: a constant expression that is NaN or infinite
  // is a shader-creation error in WGSL.
  js_special_bits: { deps: [], code: 'var<private> js_special_bits: vec2u = vec2u(0x7fc00000u, 0x7f800000u);' },
  js_nan: { deps: ['js_special_bits'], code: 'fn js_nan() -> f32 { return bitcast<f32>(js_special_bits.x); }' },
  js_inf: { deps: ['js_special_bits'], code: 'fn js_inf() -> f32 { return bitcast<f32>(js_special_bits.y); }' },
  // Float constants of the kernel, and the right operands of float `+` and `-`, go through `js_hide`:
  // OR-ing their bits with `js_opaque * n` — 0, as main copies `js_opaque` from a params word that is
  // always 0 — leaves them unchanged but unknown to the driver, which otherwise applies algebra that
  // WGSL tolerates (§15.7.2) and JS does not: lavapipe folds `0 * x` to +0 (NaN for x = ±Infinity on
  // the cpu), `x + 0` to x (−0 stays −0), `x - x` to 0 and `(x + y) - y` to x. Each use has its own n,
  // so two hidden copies of one value are not the same value to the driver either.
  js_opaque: { deps: [], code: 'var<private> js_opaque: u32;' },
  js_hide: { deps: ['js_opaque'], code: 'fn js_hide(x: f32, n: u32) -> f32 { return bitcast<f32>(bitcast<u32>(x) | (js_opaque * n)); }' },
  // `Math.random()` (compiler/random-stream.ts): the invocation's stream, set by main before the
  // kernel runs (key low and high word, loop iteration, next draw), so helpers continue it.
  js_rng: { deps: [], code: 'var<private> js_rng: vec4u;' },
  // The high word of a u32 product (WGSL has no 64-bit integers): by 16-bit halves.
  js_mulhi: {
    deps: [],
    code: `fn js_mulhi(a: u32, b: u32) -> u32 {
  let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
  let p01 = a0 * b1; let p10 = a1 * b0;
  let mid = ((a0 * b0) >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
}`,
  },
  // Philox4x32-10 of counter (iteration, 0, draw, 0), key js_rng.xy; the 24 top bits of word 0 as a
  // float32 in [0, 1). The gpu computes float64 draws this way too (it has no f64).
  js_random_f32: {
    deps: ['js_rng', 'js_mulhi'],
    code: `fn js_random_f32() -> f32 {
  var c = vec4u(js_rng.z, 0u, js_rng.w, 0u);
  var k = js_rng.xy;
  js_rng.w = js_rng.w + 1u;
  for (var r = 0u; r < 10u; r++) {
    if (r > 0u) { k = k + vec2u(0x9e3779b9u, 0xbb67ae85u); }
    let hi0 = js_mulhi(0xd2511f53u, c.x); let lo0 = 0xd2511f53u * c.x;
    let hi1 = js_mulhi(0xcd9e8d57u, c.z); let lo1 = 0xcd9e8d57u * c.z;
    c = vec4u(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
  }
  return ldexp(f32(c.x >> 8u), -24i);
}`,
  },
  js_is_nan: { deps: [], code: 'fn js_is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }' },
  js_is_inf: { deps: [], code: 'fn js_is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }' },
  js_is_finite: { deps: [], code: 'fn js_is_finite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) < 0x7f800000u; }' },
  js_copysign: {
    deps: [],
    code: '// |x| with the sign bit of s\nfn js_copysign(x: f32, s: f32) -> f32 { return bitcast<f32>((bitcast<u32>(x) & 0x7fffffffu) | (bitcast<u32>(s) & 0x80000000u)); }',
  },
  js_f32_to_i32: {
    deps: [],
    code: `// JS ToInt32: truncate, wrap modulo 2^32; NaN and ±Infinity give 0 (WGSL's i32(x) clamps).
fn js_f32_to_i32(x: f32) -> i32 {
  let bits = bitcast<u32>(x);
  if ((bits & 0x7fffffffu) < 0x4f000000u) { return i32(x); } // |x| < 2^31: truncation is exact
  let shift = ((bits >> 23u) & 0xffu) - 150u; // |x| = mantissa * 2^shift, shift >= 8 here
  if (shift >= 32u) { return 0; } // a multiple of 2^32, NaN or ±Infinity
  let magnitude = ((bits & 0x7fffffu) | 0x800000u) << shift;
  return bitcast<i32>(select(magnitude, 0u - magnitude, (bits >> 31u) != 0u));
}`,
  },
  js_f32_to_u8c: {
    deps: [],
    code: `// A Uint8ClampedArray store: NaN, -0 and negative numbers give 0, x >= 255 (+Infinity too) gives
// 255, else round half to even, computed here rather than trusting each driver's round().
fn js_f32_to_u8c(x: f32) -> i32 {
  let bits = bitcast<u32>(x);
  if (bits >= 0x80000000u || bits > 0x7f800000u) { return 0i; } // sign bit set, or NaN
  if (bits >= 0x437f0000u) { return 255i; } // 255.0 and above (positive floats order as their bits)
  let f = floor(x);
  let d = x - f; // exact below 2^24
  let k = i32(f);
  return select(k, k + 1i, d > 0.5 || (d == 0.5 && (k & 1i) == 1i));
}`,
  },
  js_f32_to_bool: {
    deps: [],
    code: '// JS truthiness: false for ±0 and NaN\nfn js_f32_to_bool(x: f32) -> bool { let m = bitcast<u32>(x) & 0x7fffffffu; return m != 0u && m <= 0x7f800000u; }',
  },
  js_fmod: {
    deps: ['js_nan'],
    code: `// x % y as JS computes it (IEEE fmod, exact), on the bits as musl's fmodf does.
fn js_fmod(x: f32, y: f32) -> f32 {
  let sign = bitcast<u32>(x) & 0x80000000u;
  var ux = bitcast<u32>(x) & 0x7fffffffu;
  let uy_bits = bitcast<u32>(y) & 0x7fffffffu;
  if (uy_bits == 0u || ux >= 0x7f800000u || uy_bits > 0x7f800000u) { return js_nan(); }
  if (ux < uy_bits) { return x; } // |x| < |y|, y = ±Infinity included; keeps -0
  if (ux == uy_bits) { return bitcast<f32>(sign); }
  var ex = i32(ux >> 23u);
  var ey = i32(uy_bits >> 23u);
  var uy = uy_bits;
  // mantissas with the leading 1 at bit 23 (subnormals normalised)
  if (ex == 0) { let s = countLeadingZeros(ux) - 8u; ux = ux << s; ex = 1 - i32(s); } else { ux = (ux & 0x7fffffu) | 0x800000u; }
  if (ey == 0) { let s = countLeadingZeros(uy) - 8u; uy = uy << s; ey = 1 - i32(s); } else { uy = (uy & 0x7fffffu) | 0x800000u; }
  for (; ex > ey; ex--) {
    if (ux >= uy) { ux = ux - uy; if (ux == 0u) { return bitcast<f32>(sign); } }
    ux = ux << 1u;
  }
  if (ux >= uy) { ux = ux - uy; if (ux == 0u) { return bitcast<f32>(sign); } }
  let s = countLeadingZeros(ux) - 8u;
  ux = ux << s;
  ex = ex - i32(s);
  if (ex > 0) { ux = (ux - 0x800000u) | (u32(ex) << 23u); } else { ux = ux >> u32(1 - ex); }
  return bitcast<f32>(ux | sign);
}`,
  },
  js_irem: {
    deps: [],
    code: '// (a % b) | 0 in JS: 0 for b = 0 (NaN | 0) and for b = -1 (-0 | 0, and no i32.min overflow)\nfn js_irem(a: i32, b: i32) -> i32 { if (b == 0 || b == -1) { return 0; } return a % b; }',
  },
  js_urem: { deps: [], code: 'fn js_urem(a: u32, b: u32) -> u32 { if (b == 0u) { return 0u; } return a % b; }' },
  js_irem_index: {
    deps: [],
    code: '// a % b as an array index: JS gives NaN for b = 0, an index out of bounds; so does i32.min here\nfn js_irem_index(a: i32, b: i32) -> i32 { if (b == 0) { return i32(0x80000000u); } if (b == -1) { return 0; } return a % b; }',
  },
  js_idiv: {
    deps: [],
    code: `// trunc(a / b) of exact integers given as magnitude and sign, wrapped to 32 bits; 0 for b = 0
// (JS: Infinity | 0 and NaN | 0 are 0). The result's bits are the int32 or uint32 answer.
fn js_idiv(a: u32, a_negative: bool, b: u32, b_negative: bool) -> u32 {
  if (b == 0u) { return 0u; }
  let q = a / b;
  return select(q, 0u - q, a_negative != b_negative);
}`,
  },
  js_imag: { deps: [], code: 'fn js_imag(x: i32) -> u32 { return select(u32(x), 0u - u32(x), x < 0); }' },
  js_idiv_ii: { deps: ['js_idiv', 'js_imag'], code: 'fn js_idiv_ii(a: i32, b: i32) -> u32 { return js_idiv(js_imag(a), a < 0, js_imag(b), b < 0); }' },
  js_idiv_iu: { deps: ['js_idiv', 'js_imag'], code: 'fn js_idiv_iu(a: i32, b: u32) -> u32 { return js_idiv(js_imag(a), a < 0, b, false); }' },
  js_idiv_ui: { deps: ['js_idiv', 'js_imag'], code: 'fn js_idiv_ui(a: u32, b: i32) -> u32 { return js_idiv(a, false, js_imag(b), b < 0); }' },
  js_idiv_uu: { deps: ['js_idiv'], code: 'fn js_idiv_uu(a: u32, b: u32) -> u32 { return js_idiv(a, false, b, false); }' },
  js_sign: {
    deps: [],
    code: '// Math.sign: ±0 and NaN are returned as they are\nfn js_sign(x: f32) -> f32 { return select(select(x, -1.0, x < 0.0), 1.0, x > 0.0); }',
  },
  js_round: {
    deps: [],
    code: `// Math.round: half up, toward +Infinity (WGSL's round is half to even); Math.round(-0.3) is -0
fn js_round(x: f32) -> f32 {
  let f = floor(x);
  let r = select(f, f + 1.0, x - f >= 0.5); // x - floor(x) is exact
  return select(r, bitcast<f32>(bitcast<u32>(x) & 0x80000000u), r == 0.0);
}`,
  },
  js_min: {
    deps: ['js_is_nan', 'js_nan'],
    code: `// Math.min: NaN if either is NaN; -0 below +0 (equal values: the negative one, if any; a GPU that
// flushes subnormals may find two different subnormals equal and return either)
fn js_min(a: f32, b: f32) -> f32 {
  if (js_is_nan(a) || js_is_nan(b)) { return js_nan(); }
  if (a == b) { return select(b, a, (bitcast<u32>(a) >> 31u) != 0u); }
  return select(b, a, a < b);
}`,
  },
  js_max: {
    deps: ['js_is_nan', 'js_nan'],
    code: `// Math.max: NaN if either is NaN; +0 above -0
fn js_max(a: f32, b: f32) -> f32 {
  if (js_is_nan(a) || js_is_nan(b)) { return js_nan(); }
  if (a == b) { return select(b, a, (bitcast<u32>(a) >> 31u) == 0u); }
  return select(b, a, a > b);
}`,
  },
  js_sqrt: { deps: ['js_nan'], code: 'fn js_sqrt(x: f32) -> f32 { return select(sqrt(x), js_nan(), x < 0.0); }' },
  js_cbrt: {
    deps: ['js_is_inf', 'js_is_nan'],
    code: `fn js_cbrt(x: f32) -> f32 {
  let a = abs(x);
  if (a == 0.0 || js_is_inf(a) || js_is_nan(a)) { return x; }
  var r = exp2(log2(a) / 3.0);
  r = r - (r - a / (r * r)) / 3.0; // one Newton step: exp2(log2(a) / 3) alone is several ULP off
  return select(r, -r, x < 0.0);
}`,
  },
  js_log: {
    deps: ['js_nan', 'js_inf'],
    code: 'fn js_log(x: f32) -> f32 { if (x > 0.0) { return log(x); } if (x == 0.0) { return -js_inf(); } return js_nan(); }',
  },
  js_log2: {
    deps: ['js_nan', 'js_inf'],
    code: 'fn js_log2(x: f32) -> f32 { if (x > 0.0) { return log2(x); } if (x == 0.0) { return -js_inf(); } return js_nan(); }',
  },
  js_log10: { deps: ['js_log2'], code: 'fn js_log10(x: f32) -> f32 { return js_log2(x) * 0.301029995663981195; }' },
  js_log1p: {
    deps: ['js_nan', 'js_inf', 'js_is_inf'],
    code: `fn js_log1p(x: f32) -> f32 {
  let u = 1.0 + x;
  if (u == 1.0) { return x; } // tiny x, and -0
  if (!(u > 0.0)) { return select(js_nan(), -js_inf(), u == 0.0); }
  if (js_is_inf(u)) { return u; }
  return log(u) * (x / (u - 1.0)); // corrects the rounding of 1 + x (Goldberg)
}`,
  },
  js_expm1: {
    deps: ['js_is_inf'],
    code: `fn js_expm1(x: f32) -> f32 {
  let u = exp(x);
  if (u == 1.0) { return x; } // tiny x, and -0
  let um1 = u - 1.0;
  if (um1 == -1.0) { return -1.0; }
  if (js_is_inf(u)) { return u; }
  return um1 * x / log(u); // corrects the rounding of exp(x) - 1 (Kahan)
}`,
  },
  js_asin: {
    deps: ['js_nan', 'js_copysign'],
    code: '// asin is odd: computed on |x| so that asin(-0) is -0\nfn js_asin(x: f32) -> f32 { return select(js_copysign(asin(abs(x)), x), js_nan(), abs(x) > 1.0); }',
  },
  js_acos: { deps: ['js_nan'], code: 'fn js_acos(x: f32) -> f32 { return select(acos(x), js_nan(), abs(x) > 1.0); }' },
  js_sinh: {
    deps: ['js_expm1', 'js_copysign', 'js_is_inf'],
    code: `// Math.sinh through expm1: WGSL's sinh is (exp(x) - exp(-x)) / 2, which cancels near 0
fn js_sinh(x: f32) -> f32 {
  let e = js_expm1(abs(x));
  if (js_is_inf(e)) { return js_copysign(e, x); }
  return js_copysign(0.5 * (e + e / (e + 1.0)), x);
}`,
  },
  js_tanh: {
    deps: ['js_copysign'],
    code: '// beyond |x| = 9, tanh(x) rounds to ±1 in f32, where exp-based built-ins overflow to NaN\nfn js_tanh(x: f32) -> f32 { return select(tanh(x), js_copysign(1.0, x), abs(x) > 9.0); }',
  },
  js_asinh: {
    deps: ['js_copysign'],
    code: `// asinh(|x|) with the sign of x; past 2^12, log(2|x|) (x * x would overflow for large x)
fn js_asinh(x: f32) -> f32 {
  let a = abs(x);
  let r = select(asinh(a), log(a) + 0.693147180559945309, a > 4096.0);
  return js_copysign(r, x);
}`,
  },
  js_acosh: {
    deps: ['js_nan'],
    code: 'fn js_acosh(x: f32) -> f32 { if (!(x >= 1.0)) { return js_nan(); } return select(acosh(x), log(x) + 0.693147180559945309, x > 4096.0); }',
  },
  js_atanh: {
    deps: ['js_nan', 'js_inf', 'js_copysign'],
    code: `fn js_atanh(x: f32) -> f32 {
  let a = abs(x);
  if (a == 1.0) { return js_copysign(js_inf(), x); }
  if (!(a < 1.0)) { return js_nan(); }
  return js_copysign(atanh(a), x); // odd, and atanh(-0) is -0
}`,
  },
  js_atan2: {
    deps: ['js_is_nan', 'js_is_inf', 'js_nan'],
    code: `// Math.atan2 with every special case of JS (WGSL's atan2 is unspecified at x = 0 and for infinities)
fn js_atan2(y: f32, x: f32) -> f32 {
  if (js_is_nan(x) || js_is_nan(y)) { return js_nan(); }
  let x_negative = (bitcast<u32>(x) >> 31u) != 0u;
  var r: f32;
  if (y == 0.0) { r = select(0.0, 3.14159265358979324, x_negative); }
  else if (x == 0.0) { r = 1.57079632679489662; }
  else if (js_is_inf(x)) { r = select(select(0.0, 3.14159265358979324, x_negative), select(0.785398163397448310, 2.35619449019234492, x_negative), js_is_inf(y)); }
  else if (js_is_inf(y)) { r = 1.57079632679489662; }
  else { return atan2(y, x); }
  return bitcast<f32>(bitcast<u32>(r) | (bitcast<u32>(y) & 0x80000000u));
}`,
  },
  js_pow: {
    deps: ['js_is_nan', 'js_is_inf', 'js_nan', 'js_inf'],
    code: `// Math.pow / **: JS defines x ** 0 = 1 (even for NaN), 1 ** ±Infinity = NaN, and negative bases
// with integer exponents; WGSL's pow is exp2(y * log2(x)), undefined for x <= 0.
fn js_pow(x: f32, y: f32) -> f32 {
  if (y == 0.0) { return 1.0; }
  // exact where JS is exact (exp2(log2(3)) is not quite 3)
  if (y == 1.0) { return x; }
  if (y == 2.0) { return x * x; }
  if (y == -1.0) { return 1.0 / x; }
  if (js_is_nan(x) || js_is_nan(y)) { return js_nan(); }
  let a = abs(x);
  if (js_is_inf(y)) {
    if (a == 1.0) { return js_nan(); }
    return select(0.0, js_inf(), (a > 1.0) == (y > 0.0));
  }
  let y_integer = trunc(y) == y;
  let y_odd = y_integer && abs(y) < 16777216.0 && trunc(y * 0.5) != y * 0.5;
  let negative = (bitcast<u32>(x) >> 31u) != 0u; // -0 included: (-0) ** 3 is -0, (-0) ** -1 is -Infinity
  if (negative && !y_integer && a != 0.0 && !js_is_inf(a)) { return js_nan(); }
  var r: f32;
  if (a == 0.0) { r = select(js_inf(), 0.0, y > 0.0); }
  else if (js_is_inf(a)) { r = select(0.0, js_inf(), y > 0.0); }
  else { r = pow(a, y); }
  return select(r, -r, negative && y_odd);
}`,
  },
  js_hypot: {
    deps: ['js_is_nan', 'js_is_inf', 'js_nan', 'js_inf'],
    code: `// Math.hypot of two: Infinity wins over NaN; scaled so that squares do not overflow
fn js_hypot(a: f32, b: f32) -> f32 {
  let x = abs(a);
  let y = abs(b);
  if (js_is_inf(x) || js_is_inf(y)) { return js_inf(); }
  if (js_is_nan(x) || js_is_nan(y)) { return js_nan(); }
  let m = max(x, y);
  if (m == 0.0) { return 0.0; }
  let p = x / m;
  let q = y / m;
  return m * sqrt(p * p + q * q);
}`,
  },
};

/**
 * The support functions one module uses, collected while its code is generated.
 *
 * @example
 * const support = new SupportLibrary();
 * const call = `${support.use('js_fmod')}(a, b)`;
 * const wgsl = support.emit() + body;
 */
export class SupportLibrary {
  private readonly used = new Set<SupportName>();

  /** Marks `name` (and what it calls) as needed; returns the name, to call it. */
  use(name: SupportName): string {
    if (!this.used.has(name)) {
      this.used.add(name);
      for (const dep of SUPPORT[name].deps) this.use(dep);
    }
    return name;
  }

  private hidden = 0;

  /** `x` (an f32 expression) through `js_hide`, with a number of its own. */
  hide(x: string): string {
    return `${this.use('js_hide')}(${x}, ${++this.hidden}u)`;
  }

  /**
   * The f32 with bit pattern `bits` (a u32 literal), unknown to the driver — built from the integer,
   * so that the shader holds no float constant for it: lavapipe merged the constants −0.0 and +0.0
   * (equal as floats), so that both zeros of `x > 1 ? 0 : -0` came out as one of them.
   */
  hideBits(bits: string): string {
    this.use('js_opaque');
    return `bitcast<f32>(${bits} | (js_opaque * ${++this.hidden}u))`;
  }

  /** Whether `name` is used so far. */
  has(name: SupportName): boolean {
    return this.used.has(name);
  }

  /** The WGSL of every function used, in a stable order. */
  emit(): string {
    return SUPPORT_NAMES.filter((n) => this.used.has(n))
      .map((n) => SUPPORT[n].code)
      .join('\n');
  }
}
