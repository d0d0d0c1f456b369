/**
 * A small WebAssembly binary encoder: just what the kernel compiler emits (one imported shared
 * memory, imported functions, defined functions, exports), written by hand because the whole
 * module is a few hundred bytes and binaryen's 10+ MB of JS costs more to load than our kernels
 * take to compile (docs/wasm-engine.md has the measurement). V8 validates the module when it
 * compiles it; a validation failure is a bug here and surfaces as a `CompileError`.
 */

/** Value types. `v128` needs the SIMD proposal (in Node ≥ 16). */
export enum ValType {
  i32 = 0x7f,
  i64 = 0x7e,
  f32 = 0x7d,
  f64 = 0x7c,
  v128 = 0x7b,
}

/** A block's type: no result, or one value. */
export const VOID = 0x40;

/** Opcodes of the core instruction set (one byte each). */
export enum Op {
  unreachable = 0x00, block = 0x02, loop = 0x03, if = 0x04, else = 0x05, end = 0x0b,
  br = 0x0c, br_if = 0x0d, return = 0x0f, call = 0x10, drop = 0x1a, select = 0x1b,
  local_get = 0x20, local_set = 0x21, local_tee = 0x22,
  i32_load = 0x28, i64_load = 0x29, f32_load = 0x2a, f64_load = 0x2b,
  i32_load8_s = 0x2c, i32_load8_u = 0x2d, i32_load16_s = 0x2e, i32_load16_u = 0x2f,
  i32_store = 0x36, i64_store = 0x37, f32_store = 0x38, f64_store = 0x39, i32_store8 = 0x3a, i32_store16 = 0x3b,
  i32_const = 0x41, i64_const = 0x42, f32_const = 0x43, f64_const = 0x44,
  i32_eqz = 0x45, i32_eq = 0x46, i32_ne = 0x47, i32_lt_s = 0x48, i32_lt_u = 0x49, i32_gt_s = 0x4a, i32_gt_u = 0x4b,
  i32_le_s = 0x4c, i32_le_u = 0x4d, i32_ge_s = 0x4e, i32_ge_u = 0x4f,
  f32_eq = 0x5b, f32_ne = 0x5c, f32_lt = 0x5d, f32_gt = 0x5e, f32_le = 0x5f, f32_ge = 0x60,
  f64_eq = 0x61, f64_ne = 0x62, f64_lt = 0x63, f64_gt = 0x64, f64_le = 0x65, f64_ge = 0x66,
  i32_clz = 0x67, i32_add = 0x6a, i32_sub = 0x6b, i32_mul = 0x6c, i32_div_s = 0x6d, i32_div_u = 0x6e,
  i32_rem_s = 0x6f, i32_rem_u = 0x70, i32_and = 0x71, i32_or = 0x72, i32_xor = 0x73,
  i32_shl = 0x74, i32_shr_s = 0x75, i32_shr_u = 0x76,
  f32_abs = 0x8b, f32_neg = 0x8c, f32_ceil = 0x8d, f32_floor = 0x8e, f32_trunc = 0x8f, f32_sqrt = 0x91,
  f32_add = 0x92, f32_sub = 0x93, f32_mul = 0x94, f32_div = 0x95, f32_min = 0x96, f32_max = 0x97,
  f64_abs = 0x99, f64_neg = 0x9a, f64_ceil = 0x9b, f64_floor = 0x9c, f64_trunc = 0x9d, f64_nearest = 0x9e, f64_sqrt = 0x9f,
  f64_add = 0xa0, f64_sub = 0xa1, f64_mul = 0xa2, f64_div = 0xa3, f64_min = 0xa4, f64_max = 0xa5,
  i64_eqz = 0x50, i64_lt_s = 0x53, i64_gt_u = 0x56, i64_le_u = 0x58, i64_ge_u = 0x5a, i64_mul = 0x7e, i64_add = 0x7c, i64_sub = 0x7d, i64_rem_s = 0x81, i64_and = 0x83, i64_or = 0x84, i64_shl = 0x86, i64_shr_s = 0x87, i64_shr_u = 0x88,
  f64_copysign = 0xa6, i32_trunc_f64_s = 0xaa,
  i32_wrap_i64 = 0xa7, i32_trunc_f64_u = 0xab, i64_extend_i32_s = 0xac, i64_extend_i32_u = 0xad,
  f32_convert_i32_s = 0xb2, f32_convert_i32_u = 0xb3, f32_demote_f64 = 0xb6,
  f64_convert_i32_s = 0xb7, f64_convert_i32_u = 0xb8, f64_promote_f32 = 0xbb,
  i64_reinterpret_f64 = 0xbd, f32_reinterpret_i32 = 0xbe, f64_reinterpret_i64 = 0xbf,
  i32_extend8_s = 0xc0, i32_extend16_s = 0xc1,
}

/** `0xFC`-prefixed opcodes (saturating truncation, bulk memory). */
export enum MiscOp {
  i32_trunc_sat_f32_s = 0,
  i32_trunc_sat_f64_s = 2,
  i32_trunc_sat_f64_u = 3,
  i64_trunc_sat_f64_s = 6,
  memory_fill = 11,
}

/** `0xFD`-prefixed opcodes: 128-bit SIMD. */
export enum SimdOp {
  v128_load = 0x00, v128_store = 0x0b, v128_const = 0x0c,
  i32x4_splat = 0x11, i64x2_splat = 0x12, f32x4_splat = 0x13, f64x2_splat = 0x14,
  i32x4_extract_lane = 0x1b, i32x4_replace_lane = 0x1c, i64x2_extract_lane = 0x1d, i64x2_replace_lane = 0x1e,
  f32x4_extract_lane = 0x1f, f32x4_replace_lane = 0x20, f64x2_extract_lane = 0x21, f64x2_replace_lane = 0x22,
  i32x4_eq = 0x37, i32x4_ne = 0x38, i32x4_lt_s = 0x39, i32x4_lt_u = 0x3a, i32x4_gt_s = 0x3b, i32x4_gt_u = 0x3c,
  i32x4_le_s = 0x3d, i32x4_le_u = 0x3e, i32x4_ge_s = 0x3f, i32x4_ge_u = 0x40,
  f32x4_eq = 0x41, f32x4_ne = 0x42, f32x4_lt = 0x43, f32x4_gt = 0x44, f32x4_le = 0x45, f32x4_ge = 0x46,
  f64x2_eq = 0x47, f64x2_ne = 0x48, f64x2_lt = 0x49, f64x2_gt = 0x4a, f64x2_le = 0x4b, f64x2_ge = 0x4c,
  v128_not = 0x4d, v128_and = 0x4e, v128_andnot = 0x4f, v128_or = 0x50, v128_xor = 0x51, v128_bitselect = 0x52,
  v128_any_true = 0x53,
  f32x4_ceil = 0x67, f32x4_floor = 0x68, f32x4_trunc = 0x69,
  f64x2_ceil = 0x74, f64x2_floor = 0x75, f64x2_trunc = 0x7a, f64x2_nearest = 0x94,
  i32x4_abs = 0xa0, i32x4_neg = 0xa1, i32x4_shl = 0xab, i32x4_shr_s = 0xac, i32x4_shr_u = 0xad,
  i32x4_add = 0xae, i32x4_sub = 0xb1, i32x4_mul = 0xb5,
  i32x4_min_s = 0xb6, i32x4_min_u = 0xb7, i32x4_max_s = 0xb8, i32x4_max_u = 0xb9,
  f32x4_abs = 0xe0, f32x4_neg = 0xe1, f32x4_sqrt = 0xe3, f32x4_add = 0xe4, f32x4_sub = 0xe5, f32x4_mul = 0xe6,
  f32x4_div = 0xe7, f32x4_min = 0xe8, f32x4_max = 0xe9, f32x4_pmin = 0xea, f32x4_pmax = 0xeb,
  f64x2_abs = 0xec, f64x2_neg = 0xed, f64x2_sqrt = 0xef, f64x2_add = 0xf0, f64x2_sub = 0xf1, f64x2_mul = 0xf2,
  f64x2_div = 0xf3, f64x2_min = 0xf4, f64x2_max = 0xf5, f64x2_pmin = 0xf6, f64x2_pmax = 0xf7,
  i32x4_trunc_sat_f32x4_s = 0xf8, f32x4_convert_i32x4_s = 0xfa, f32x4_convert_i32x4_u = 0xfb,
  i8x16_shuffle = 0x0d, v128_load32_lane = 0x56, v128_load64_lane = 0x57, v128_store32_lane = 0x5a, v128_store64_lane = 0x5b,
  f32x4_demote_f64x2_zero = 0x5e, f64x2_promote_low_f32x4 = 0x5f, i64x2_neg = 0xc1, i64x2_extend_low_i32x4_s = 0xc7,
  f64x2_convert_low_i32x4_s = 0xfe, f64x2_convert_low_i32x4_u = 0xff,
  i64x2_extend_high_i32x4_s = 0xc8,
  i32x4_all_true = 0xa3, i64x2_all_true = 0xc3, i64x2_shl = 0xcb, i64x2_shr_s = 0xcc, i64x2_shr_u = 0xcd,
  i64x2_add = 0xce, i64x2_sub = 0xd1, i64x2_eq = 0xd6, i64x2_ne = 0xd7, i64x2_lt_s = 0xd8, i64x2_gt_s = 0xd9, i64x2_le_s = 0xda, i64x2_ge_s = 0xdb,
  // Narrow integers: extending loads, lane loads and stores, and 8/16-bit lane arithmetic.
  v128_load8x8_s = 0x01, v128_load8x8_u = 0x02, v128_load16x4_s = 0x03, v128_load16x4_u = 0x04,
  v128_load8_lane = 0x54, v128_load16_lane = 0x55, v128_store8_lane = 0x58, v128_store16_lane = 0x59,
  v128_load32_zero = 0x5c, v128_load64_zero = 0x5d,
  i8x16_splat = 0x0f, i16x8_splat = 0x10,
  i16x8_extend_low_i8x16_s = 0x87, i16x8_extend_low_i8x16_u = 0x89,
  i32x4_extend_low_i16x8_s = 0xa7, i32x4_extend_low_i16x8_u = 0xa9,
  i8x16_add = 0x6e, i8x16_add_sat_s = 0x6f, i8x16_add_sat_u = 0x70, i8x16_sub = 0x71, i8x16_sub_sat_s = 0x72, i8x16_sub_sat_u = 0x73,
  i8x16_min_s = 0x76, i8x16_min_u = 0x77, i8x16_max_s = 0x78, i8x16_max_u = 0x79,
  i16x8_add = 0x8e, i16x8_add_sat_s = 0x8f, i16x8_add_sat_u = 0x90, i16x8_sub = 0x91, i16x8_sub_sat_s = 0x92, i16x8_sub_sat_u = 0x93,
  i16x8_mul = 0x95, i16x8_min_s = 0x96, i16x8_min_u = 0x97, i16x8_max_s = 0x98, i16x8_max_u = 0x99,
  i16x8_abs = 0x80, i16x8_neg = 0x81, i16x8_shl = 0x8b, i16x8_shr_s = 0x8c, i16x8_shr_u = 0x8d,
  i8x16_eq = 0x23, i8x16_ne = 0x24, i8x16_lt_s = 0x25, i8x16_lt_u = 0x26, i8x16_gt_s = 0x27, i8x16_gt_u = 0x28,
  i8x16_le_s = 0x29, i8x16_le_u = 0x2a, i8x16_ge_s = 0x2b, i8x16_ge_u = 0x2c,
  i8x16_abs = 0x60, i8x16_neg = 0x61, i8x16_shl = 0x6b, i8x16_shr_s = 0x6c, i8x16_shr_u = 0x6d,
  i16x8_eq = 0x2d, i16x8_ne = 0x2e, i16x8_lt_s = 0x2f, i16x8_gt_s = 0x31, i16x8_le_s = 0x33, i16x8_ge_s = 0x35,
  i16x8_lt_u = 0x30, i16x8_gt_u = 0x32, i16x8_le_u = 0x34, i16x8_ge_u = 0x36,
  // Float → integer: saturating truncation (NaN → 0), and f32 rounding to nearest, ties to even.
  i32x4_trunc_sat_f32x4_u = 0xf9, i32x4_trunc_sat_f64x2_s_zero = 0xfc, i32x4_trunc_sat_f64x2_u_zero = 0xfd,
  f32x4_nearest = 0x6a,
  // Saturating narrowing of two vectors into one (the first's lanes low, the second's high).
  i8x16_narrow_i16x8_s = 0x65, i8x16_narrow_i16x8_u = 0x66, i16x8_narrow_i32x4_s = 0x85, i16x8_narrow_i32x4_u = 0x86,
}

/** A growable byte buffer with the encodings the binary format uses. */
export class Bytes {
  private buf = new Uint8Array(256);
  length = 0;

  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }

  byte(b: number): this {
    this.reserve(1);
    this.buf[this.length++] = b;
    return this;
  }

  bytes(bs: ArrayLike<number>): this {
    this.reserve(bs.length);
    this.buf.set(bs, this.length);
    this.length += bs.length;
    return this;
  }

  /** Unsigned LEB128. */
  u32(n: number): this {
    n >>>= 0;
    do {
      let b = n & 0x7f;
      n >>>= 7;
      if (n !== 0) b |= 0x80;
      this.byte(b);
    } while (n !== 0);
    return this;
  }

  /** Signed LEB128 of a 32-bit integer. */
  s32(n: number): this {
    n |= 0;
    for (;;) {
      const b = n & 0x7f;
      n >>= 7;
      if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) return this.byte(b);
      this.byte(b | 0x80);
    }
  }

  /** Signed LEB128 of a 64-bit integer. */
  s64(n: bigint): this {
    n = BigInt.asIntN(64, n);
    for (;;) {
      const b = Number(n & 0x7fn);
      n >>= 7n;
      if ((n === 0n && (b & 0x40) === 0) || (n === -1n && (b & 0x40) !== 0)) return this.byte(b);
      this.byte(b | 0x80);
    }
  }

  f32(x: number): this {
    const v = new DataView(new ArrayBuffer(4));
    v.setFloat32(0, x, true);
    return this.bytes(new Uint8Array(v.buffer));
  }

  f64(x: number): this {
    const v = new DataView(new ArrayBuffer(8));
    v.setFloat64(0, x, true);
    return this.bytes(new Uint8Array(v.buffer));
  }

  name(s: string): this {
    const utf8 = new TextEncoder().encode(s);
    return this.u32(utf8.length).bytes(utf8);
  }

  /** Appends another buffer prefixed by its length (a section or a function body). */
  sized(other: Bytes): this {
    return this.u32(other.length).bytes(other.view());
  }

  view(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }

  /** Drops every byte from `length` on. */
  truncate(length: number): this {
    this.length = Math.min(this.length, length);
    return this;
  }
}

/** A function signature. */
export interface FuncType {
  readonly params: readonly ValType[];
  readonly results: readonly ValType[];
}

/** One defined function: its type, the types of its locals beyond the parameters, its code. */
export interface FuncDef {
  readonly type: FuncType;
  readonly locals: readonly ValType[];
  /** The instructions, ending with `end`. */
  readonly code: Bytes;
  readonly exportName?: string;
}

/** Builds a module: imported functions are numbered first, then defined ones, as the format says. */
export class ModuleBuilder {
  private readonly types: FuncType[] = [];
  private readonly typeKeys = new Map<string, number>();
  private readonly imports: { module: string; name: string; type: number }[] = [];
  private readonly funcs: { type: number; def?: FuncDef }[] = [];

  constructor(
    /** Minimum pages of the imported memory `env.memory`; 0 for modules that read no memory. */
    private readonly memoryPages: { min: number; max: number; shared: boolean } | undefined,
  ) {}

  private typeIndex(t: FuncType): number {
    const key = `${t.params.join(',')}>${t.results.join(',')}`;
    let i = this.typeKeys.get(key);
    if (i === undefined) {
      i = this.types.length;
      this.types.push(t);
      this.typeKeys.set(key, i);
    }
    return i;
  }

  /** Declares an imported function; must be called before any `declare`. */
  importFunction(module: string, name: string, type: FuncType): number {
    if (this.funcs.length > 0) throw new Error('imports must be declared before defined functions');
    this.imports.push({ module, name, type: this.typeIndex(type) });
    return this.imports.length - 1;
  }

  /** Reserves the index of a defined function (so callers can call it before it is built). */
  declare(type: FuncType): number {
    this.funcs.push({ type: this.typeIndex(type) });
    return this.imports.length + this.funcs.length - 1;
  }

  define(index: number, def: FuncDef): void {
    this.funcs[index - this.imports.length]!.def = def;
  }

  encode(): Uint8Array {
    const out = new Bytes().bytes([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
    const section = (id: number, body: Bytes) => out.byte(id).sized(body);

    const types = new Bytes().u32(this.types.length);
    for (const t of this.types) {
      types.byte(0x60).u32(t.params.length).bytes(t.params).u32(t.results.length).bytes(t.results);
    }
    section(1, types);

    const imports = new Bytes().u32(this.imports.length + (this.memoryPages ? 1 : 0));
    if (this.memoryPages) {
      const { min, max, shared } = this.memoryPages;
      imports.name('env').name('memory').byte(0x02).byte(shared ? 0x03 : 0x01).u32(min).u32(max);
    }
    for (const i of this.imports) imports.name(i.module).name(i.name).byte(0x00).u32(i.type);
    section(2, imports);

    const funcs = new Bytes().u32(this.funcs.length);
    for (const f of this.funcs) funcs.u32(f.type);
    section(3, funcs);

    const exported = this.funcs.map((f, i) => [f.def?.exportName, i + this.imports.length] as const).filter(([n]) => n !== undefined);
    const exports = new Bytes().u32(exported.length);
    for (const [name, index] of exported) exports.name(name!).byte(0x00).u32(index);
    section(7, exports);

    const code = new Bytes().u32(this.funcs.length);
    for (const f of this.funcs) {
      const def = f.def;
      if (!def) throw new Error('a declared function was never defined');
      const body = new Bytes();
      // Locals in runs of equal types, as the format groups them.
      const runs: [number, ValType][] = [];
      for (const t of def.locals) {
        const last = runs[runs.length - 1];
        if (last && last[1] === t) last[0]++;
        else runs.push([1, t]);
      }
      body.u32(runs.length);
      for (const [n, t] of runs) body.u32(n).byte(t);
      body.bytes(def.code.view());
      code.sized(body);
    }
    section(10, code);
    return out.view().slice();
  }
}
