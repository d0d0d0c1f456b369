/**
 * fdlibm's reduction of huge arguments, |x| > 2^19·π/2, ported to Wasm as V8 has it: the last
 * branch of __ieee754_rem_pio2 (|x| cut into three 24-bit pieces) and __kernel_rem_pio2 with
 * prec = 2 (x·2/π computed from a table of 2/π's bits, 24 at a time, recomputing with more terms
 * where the fraction cancels). Its arrays (tx, f, q, fq, iq) and tables (2/π's bits, π/2 in
 * 24-bit pieces) live in the calling thread's scratch area, at the offset the module gives it; the
 * tables are written there on each call (rare: only huge |x| come here).
 */
import { Op, SimdOp, ValType } from './encoder.js';
import type { FunctionEmitter } from './emit-scalar.js';
import { Floats, fromWords, highWords, lowWordI32, type Value } from './float-ops.js';
import type { PortFunction } from './math-port.js';

/** 2/π in 24-bit pieces (fdlibm's two_over_pi, 396 hex digits). */
const TWO_OVER_PI = [
  0xa2f983, 0x6e4e44, 0x1529fc, 0x2757d1, 0xf534dd, 0xc0db62, 0x95993c, 0x439041, 0xfe5163, 0xabdebb, 0xc561b7, 0x246e3a,
  0x424dd2, 0xe00649, 0x2eea09, 0xd1921c, 0xfe1deb, 0x1cb129, 0xa73ee8, 0x8235f5, 0x2ebb44, 0x84e99c, 0x7026b4, 0x5f7e41,
  0x3991d6, 0x398353, 0x39f49c, 0x845f8b, 0xbdf928, 0x3b1ff8, 0x97ffde, 0x05980f, 0xef2f11, 0x8b5a0a, 0x6d1f6d, 0x367ecf,
  0x27cb09, 0xb74f46, 0x3f669e, 0x5fea2d, 0x7527ba, 0xc7ebe5, 0xf17b3d, 0x0739f7, 0x8a5292, 0xea6bfb, 0x5fb11f, 0x8d5d08,
  0x560330, 0x46fc7b, 0x6babf0, 0xcfbc20, 0x9af436, 0x1da9e3, 0x91615e, 0xe61b08, 0x659985, 0x5f14a0, 0x68408d, 0xffd880,
  0x4d7327, 0x310606, 0x1556ca, 0x73a8c9, 0x60e27b, 0xc08c6b,
];
/** π/2 in 24-bit pieces (fdlibm's PIo2). */
const PIO2_PIECES = [
  fromWords(0x3ff921fb, 0x40000000), fromWords(0x3e74442d, 0), fromWords(0x3cf84698, 0x80000000), fromWords(0x3b78cc51, 0x60000000),
  fromWords(0x39f01b83, 0x80000000), fromWords(0x387a2520, 0x40000000), fromWords(0x36e38222, 0x80000000), fromWords(0x3569f31d, 0),
];
const TWO24 = 2 ** 24;
const TWON24 = 2 ** -24;
/** jk + 1 terms to start with (prec = 2: 64 bits), and jp = jk terms of π/2. */
const JK = 4;

/** Byte offsets within the function's scratch area. */
const AT = { ipio2: 0, pio2: 264, tx: 328, f: 352, q: 512, fq: 672, iq: 832 } as const;
/** Bytes of scratch the reduction uses (arrays of 20, as fdlibm's). */
export const REM_PIO2_LARGE_BYTES = 912;

/**
 * `fdlibm:rem_pio2_large(x, scratch) → (y0, y1, n)` for finite |x| > 2^19·π/2:
 * y0 + y1 = x − n·π/2 (n mod 8 as fdlibm returns it, with x's sign).
 */
export const remPio2Large: PortFunction = {
  params: [ValType.f64, ValType.i32], results: [ValType.f64, ValType.f64, ValType.i32], calls: [], scratchBytes: REM_PIO2_LARGE_BYTES, takesScratch: true,
  emit(e, _index, scratchOffset) {
    const base = e.local(ValType.i32);
    e.get(1).i32(scratchOffset).op(Op.i32_add).set(base);
    writeTables(e, base);
    new Reduction(e, base).emit(0);
  },
};

/** Writes 2/π's and π/2's pieces at the start of the scratch area (16 bytes at a time). */
function writeTables(e: FunctionEmitter, base: number): void {
  const bytes = new Uint8Array(AT.tx);
  const view = new DataView(bytes.buffer);
  TWO_OVER_PI.forEach((v, i) => view.setInt32(AT.ipio2 + 4 * i, v, true));
  PIO2_PIECES.forEach((v, i) => view.setFloat64(AT.pio2 + 8 * i, v, true));
  for (let at = 0; at < bytes.length; at += 16) {
    e.get(base);
    e.simd(SimdOp.v128_const);
    for (let b = 0; b < 16; b++) e.code.byte(bytes[at + b] ?? 0);
    e.simd(SimdOp.v128_store).code.u32(0).u32(at);
  }
}

/** The reduction's code: locals, array access, loops. */
class Reduction {
  private readonly F: Floats;
  /** fdlibm's variables (i32 and f64 locals). */
  private readonly v: Record<'hx' | 'ix' | 'e0' | 'nx' | 'jx' | 'jv' | 'q0' | 'jz' | 'i' | 'j' | 'k' | 'n' | 'ih' | 'carry' | 'z' | 'fw', number>;
  constructor(private readonly e: FunctionEmitter, private readonly base: number) {
    this.F = new Floats(e, false);
    const i32 = () => e.local(ValType.i32);
    this.v = {
      hx: i32(), ix: i32(), e0: i32(), nx: i32(), jx: i32(), jv: i32(), q0: i32(), jz: i32(), i: i32(), j: i32(), k: i32(), n: i32(), ih: i32(), carry: i32(),
      z: e.local(ValType.f64), fw: e.local(ValType.f64),
    };
  }

  /** Pushes base + 8·index (index: i32 code); the array's offset goes in the access's immediate. */
  private f64Address(index: () => void): void {
    this.e.get(this.base);
    index();
    this.e.i32(3).op(Op.i32_shl).op(Op.i32_add);
  }

  /** Reads f64 array `at`[index]. */
  load(at: number, index: () => void): Value {
    return () => {
      this.f64Address(index);
      this.e.code.byte(Op.f64_load).u32(3).u32(at);
    };
  }

  /** f64 array `at`[index] = v. */
  store(at: number, index: () => void, v: Value): void {
    this.f64Address(index);
    v();
    this.e.code.byte(Op.f64_store).u32(3).u32(at);
  }

  /** Pushes i32 array `at`[index] (iq, or 2/π's pieces). */
  loadI32(at: number, index: () => void): void {
    this.e.get(this.base);
    index();
    this.e.i32(2).op(Op.i32_shl).op(Op.i32_add);
    this.e.code.byte(Op.i32_load).u32(2).u32(at);
  }

  /** i32 array `at`[index] = value (i32 code). */
  storeI32(at: number, index: () => void, value: () => void): void {
    this.e.get(this.base);
    index();
    this.e.i32(2).op(Op.i32_shl).op(Op.i32_add);
    value();
    this.e.code.byte(Op.i32_store).u32(2).u32(at);
  }

  /** `for (init; cond; step) body` with i32 code pieces. */
  loop(init: () => void, cond: () => void, step: () => void, body: () => void): void {
    const e = this.e;
    init();
    e.open('block');
    const exit = e.depth() - 1;
    e.open('loop');
    const top = e.depth() - 1;
    cond();
    e.op(Op.i32_eqz).br(exit, true);
    body();
    step();
    e.br(top);
    e.close();
    e.close();
  }

  /** 2^n as a double (n an i32 local, within the normal exponents): fdlibm's scalbn(1, n). */
  pow2(n: () => void): Value {
    return () => {
      n();
      this.e.i32(1023).op(Op.i32_add).op(Op.i64_extend_i32_u).code.byte(Op.i64_const).s64(52n);
      this.e.op(Op.i64_shl).op(Op.f64_reinterpret_i64);
    };
  }

  /** (double)(int32_t)v */
  intPart(v: Value): Value {
    return () => {
      v();
      this.e.op(Op.i32_trunc_f64_s).op(Op.f64_convert_i32_s);
    };
  }

  emit(X: number): void {
    this.split(X);
    this.start();
    this.distill();
    this.finish();
  }

  /** |x| in three 24-bit pieces tx[0…2] (nx of them non-zero), scaled by 2^−e0. */
  private split(X: number): void {
    const { e, F } = this;
    const { hx, ix, e0, nx, z } = this.v;
    const i32 = (v: number) => () => void e.i32(v);
    highWords(e, X, hx, ix);

    // z = scalbn(|x|, ilogb(x) − 23): x's low word, high word ix − (e0 << 20)
    e.get(ix).i32(20).op(Op.i32_shr_u).i32(1046).op(Op.i32_sub).set(e0);
    e.get(ix).get(e0).i32(20).op(Op.i32_shl).op(Op.i32_sub).op(Op.i64_extend_i32_u).code.byte(Op.i64_const).s64(32n);
    e.op(Op.i64_shl);
    lowWordI32(e, X);
    e.op(Op.i64_extend_i32_u).op(Op.i64_or);
    e.op(Op.f64_reinterpret_i64).set(z);
    // tx[0], tx[1]: 24-bit integer parts; tx[2] the rest
    for (let i = 0; i < 2; i++) {
      this.store(AT.tx, i32(i), this.intPart(F.get(z)));
      F.set(z, F.mul(F.sub(F.get(z), this.load(AT.tx, i32(i))), F.c(TWO24)));
    }
    this.store(AT.tx, i32(2), F.get(z));
    e.i32(3).set(nx);
    this.loop(() => {}, () => (F.eq(this.load(AT.tx, () => e.get(nx).i32(1).op(Op.i32_sub)), F.c(0))()), () => {}, () => void e.get(nx).i32(1).op(Op.i32_sub).set(nx));
  }

  /** __kernel_rem_pio2(tx, y, e0, nx, 2, two_over_pi): jv, q0, f[] and the first q[]. */
  private start(): void {
    const { e, F } = this;
    const { e0, nx, jx, jv, q0, jz, i, j } = this.v;
    const get = (l: number) => () => void e.get(l);
    e.get(nx).i32(1).op(Op.i32_sub).set(jx);
    // jv = max(0, (e0 − 3)/24) (C's division truncates toward zero); q0 = e0 − 24·(jv + 1)
    e.get(e0).i32(3).op(Op.i32_sub).i32(24).op(Op.i32_div_s).tee(jv).i32(0).op(Op.i32_lt_s).open('if');
    e.i32(0).set(jv);
    e.close();
    e.get(e0).i32(24).get(jv).i32(1).op(Op.i32_add).op(Op.i32_mul).op(Op.i32_sub).set(q0);
    // f[0 … jx + jk] = ipio2[jv − jx + i] (0 before the table)
    this.loop(() => e.i32(0).set(i), () => e.get(i).get(jx).i32(JK).op(Op.i32_add).op(Op.i32_le_s), () => e.get(i).i32(1).op(Op.i32_add).set(i), () => {
      e.get(jv).get(jx).op(Op.i32_sub).get(i).op(Op.i32_add).set(j);
      this.store(AT.f, get(i), F.select(() => e.get(j).i32(0).op(Op.i32_lt_s), F.c(0), () => (this.loadI32(AT.ipio2, () => e.get(j).i32(0).get(j).i32(0).op(Op.i32_ge_s).op(Op.select)), e.op(Op.f64_convert_i32_s))));
    });
    // q[i] = Σ_j x[j]·f[jx + i − j], i = 0 … jk
    this.loop(() => e.i32(0).set(i), () => e.get(i).i32(JK).op(Op.i32_le_s), () => e.get(i).i32(1).op(Op.i32_add).set(i), () => this.productTerm(i));
    e.i32(JK).set(jz);

  }

  /** The integer and fraction of x·2/π from q[], with more terms while the fraction cancels ("recompute"). */
  private distill(): void {
    const { e, F } = this;
    const { jx, jv, q0, jz, i, j, k, n, ih, carry, z, fw } = this.v;
    const get = (l: number) => () => void e.get(l);
    // recompute:
    e.open('block');
    e.open('loop');
    const recompute = e.depth() - 1;
    {
      // distill q[] into iq[] reversingly
      F.set(z, this.load(AT.q, get(jz)));
      this.loop(() => (e.i32(0).set(i), e.get(jz).set(j)), () => e.get(j).i32(0).op(Op.i32_gt_s), () => (e.get(i).i32(1).op(Op.i32_add).set(i), e.get(j).i32(1).op(Op.i32_sub).set(j)), () => {
        F.set(fw, this.intPart(F.mul(F.c(TWON24), F.get(z))));
        this.storeI32(AT.iq, get(i), () => (F.sub(F.get(z), F.mul(F.c(TWO24), F.get(fw)))(), e.op(Op.i32_trunc_f64_s)));
        F.set(z, F.add(this.load(AT.q, () => e.get(j).i32(1).op(Op.i32_sub)), F.get(fw)));
      });
      // n = integer part of z·2^q0 mod 8, z its fraction
      F.set(z, F.mul(F.get(z), this.pow2(get(q0))));
      F.set(z, F.sub(F.get(z), F.mul(F.c(8), () => (F.mul(F.get(z), F.c(0.125))(), e.op(Op.f64_floor)))));
      F.get(z)();
      e.op(Op.i32_trunc_f64_s).set(n);
      F.set(z, F.sub(F.get(z), () => e.get(n).op(Op.f64_convert_i32_s)));
      e.i32(0).set(ih);
      const last = () => e.get(jz).i32(1).op(Op.i32_sub);
      e.get(q0).i32(0).op(Op.i32_gt_s).open('if');
      {
        // i = iq[jz−1] >> (24 − q0); n += i; iq[jz−1] −= i << (24 − q0); ih = iq[jz−1] >> (23 − q0)
        this.loadI32(AT.iq, last);
        e.i32(24).get(q0).op(Op.i32_sub).op(Op.i32_shr_s).set(i);
        e.get(n).get(i).op(Op.i32_add).set(n);
        this.storeI32(AT.iq, last, () => (this.loadI32(AT.iq, last), e.get(i).i32(24).get(q0).op(Op.i32_sub).op(Op.i32_shl).op(Op.i32_sub)));
        this.loadI32(AT.iq, last);
        e.i32(23).get(q0).op(Op.i32_sub).op(Op.i32_shr_s).set(ih);
      }
      e.else();
      e.get(q0).op(Op.i32_eqz).open('if');
      this.loadI32(AT.iq, last);
      e.i32(23).op(Op.i32_shr_s).set(ih);
      e.else();
      F.ge(F.get(z), F.c(0.5))();
      e.open('if');
      e.i32(2).set(ih);
      e.close();
      e.close();
      e.close();
      // q > 0.5: n += 1, iq = 1 − iq (with its carry), z = 1 − z
      e.get(ih).i32(0).op(Op.i32_gt_s).open('if');
      {
        e.get(n).i32(1).op(Op.i32_add).set(n);
        e.i32(0).set(carry);
        this.loop(() => e.i32(0).set(i), () => e.get(i).get(jz).op(Op.i32_lt_s), () => e.get(i).i32(1).op(Op.i32_add).set(i), () => {
          this.loadI32(AT.iq, get(i));
          e.set(j);
          e.get(carry).op(Op.i32_eqz).open('if');
          e.get(j).open('if');
          e.i32(1).set(carry);
          this.storeI32(AT.iq, get(i), () => e.i32(0x1000000).get(j).op(Op.i32_sub));
          e.close();
          e.else();
          this.storeI32(AT.iq, get(i), () => e.i32(0xffffff).get(j).op(Op.i32_sub));
          e.close();
        });
        for (const [q, mask] of [[1, 0x7fffff], [2, 0x3fffff]] as const) {
          e.get(q0).i32(q).op(Op.i32_eq).open('if');
          this.storeI32(AT.iq, last, () => (this.loadI32(AT.iq, last), e.i32(mask).op(Op.i32_and)));
          e.close();
        }
        e.get(ih).i32(2).op(Op.i32_eq).open('if');
        F.set(z, F.sub(F.c(1), F.get(z)));
        e.get(carry).open('if');
        F.set(z, F.sub(F.get(z), this.pow2(get(q0))));
        e.close();
        e.close();
      }
      e.close();
      // z == 0 and iq[jk … jz−1] all 0: more terms of 2/π are needed
      F.eq(F.get(z), F.c(0))();
      e.open('if');
      {
        e.i32(0).set(j);
        this.loop(() => e.get(jz).i32(1).op(Op.i32_sub).set(i), () => e.get(i).i32(JK).op(Op.i32_ge_s), () => e.get(i).i32(1).op(Op.i32_sub).set(i), () => {
          e.get(j);
          this.loadI32(AT.iq, get(i));
          e.op(Op.i32_or).set(j);
        });
        e.get(j).op(Op.i32_eqz).open('if');
        {
          // k = the number of terms needed: 1 + the zero pieces iq[jk−1], iq[jk−2], …
          e.i32(1).set(k);
          this.loop(() => {}, () => {
            e.get(k).i32(JK).op(Op.i32_le_s).open('if', ValType.i32);
            this.loadI32(AT.iq, () => e.i32(JK).get(k).op(Op.i32_sub));
            e.op(Op.i32_eqz);
            e.else();
            e.i32(0);
            e.close();
          }, () => e.get(k).i32(1).op(Op.i32_add).set(k), () => {});
          // q[jz+1 … jz+k], with f[jx + i] = ipio2[jv + i]
          this.loop(() => e.get(jz).i32(1).op(Op.i32_add).set(i), () => e.get(i).get(jz).get(k).op(Op.i32_add).op(Op.i32_le_s), () => e.get(i).i32(1).op(Op.i32_add).set(i), () => {
            this.store(AT.f, () => e.get(jx).get(i).op(Op.i32_add), () => (this.loadI32(AT.ipio2, () => e.get(jv).get(i).op(Op.i32_add)), e.op(Op.f64_convert_i32_s)));
            this.productTerm(i);
          });
          e.get(jz).get(k).op(Op.i32_add).set(jz);
          e.br(recompute);
        }
        e.close();
      }
      e.close();
    }
    e.close(); // loop
    e.close(); // block

  }

  /** The fraction in 24-bit pieces, times π/2 (fq[]), folded into y0 + y1. */
  private finish(): void {
    const { e, F } = this;
    const { hx, q0, jz, i, k, n, ih, z, fw } = this.v;
    const get = (l: number) => () => void e.get(l);
    const i32 = (v: number) => () => void e.i32(v);
    // chop off zero terms, or break z into 24-bit pieces
    F.eq(F.get(z), F.c(0))();
    e.open('if');
    {
      e.get(jz).i32(1).op(Op.i32_sub).set(jz);
      e.get(q0).i32(24).op(Op.i32_sub).set(q0);
      this.loop(() => {}, () => (this.loadI32(AT.iq, get(jz)), e.op(Op.i32_eqz)), () => {}, () => {
        e.get(jz).i32(1).op(Op.i32_sub).set(jz);
        e.get(q0).i32(24).op(Op.i32_sub).set(q0);
      });
    }
    e.else();
    {
      F.set(z, F.mul(F.get(z), this.pow2(() => e.i32(0).get(q0).op(Op.i32_sub))));
      F.ge(F.get(z), F.c(TWO24))();
      e.open('if');
      F.set(fw, this.intPart(F.mul(F.c(TWON24), F.get(z))));
      this.storeI32(AT.iq, get(jz), () => (F.sub(F.get(z), F.mul(F.c(TWO24), F.get(fw)))(), e.op(Op.i32_trunc_f64_s)));
      e.get(jz).i32(1).op(Op.i32_add).set(jz);
      e.get(q0).i32(24).op(Op.i32_add).set(q0);
      this.storeI32(AT.iq, get(jz), () => (F.get(fw)(), e.op(Op.i32_trunc_f64_s)));
      e.else();
      this.storeI32(AT.iq, get(jz), () => (F.get(z)(), e.op(Op.i32_trunc_f64_s)));
      e.close();
    }
    e.close();

    // q[i] = 2^q0 · iq[i], i = jz … 0
    F.set(fw, this.pow2(get(q0)));
    this.loop(() => e.get(jz).set(i), () => e.get(i).i32(0).op(Op.i32_ge_s), () => e.get(i).i32(1).op(Op.i32_sub).set(i), () => {
      this.store(AT.q, get(i), F.mul(F.get(fw), () => (this.loadI32(AT.iq, get(i)), e.op(Op.f64_convert_i32_s))));
      F.set(fw, F.mul(F.get(fw), F.c(TWON24)));
    });
    // fq[jz − i] = Σ_{k ≤ jp, k ≤ jz − i} PIo2[k]·q[i + k]
    this.loop(() => e.get(jz).set(i), () => e.get(i).i32(0).op(Op.i32_ge_s), () => e.get(i).i32(1).op(Op.i32_sub).set(i), () => {
      F.set(fw, F.c(0));
      this.loop(() => e.i32(0).set(k), () => e.get(k).i32(JK).op(Op.i32_le_s).get(k).get(jz).get(i).op(Op.i32_sub).op(Op.i32_le_s).op(Op.i32_and), () => e.get(k).i32(1).op(Op.i32_add).set(k), () => {
        F.set(fw, F.add(F.get(fw), F.mul(this.load(AT.pio2, get(k)), this.load(AT.q, () => e.get(i).get(k).op(Op.i32_add)))));
      });
      this.store(AT.fq, () => e.get(jz).get(i).op(Op.i32_sub), F.get(fw));
    });
    // prec 2: y0 = Σ fq (from the smallest), y1 = (fq[0] − y0) + Σ_{i ≥ 1} fq[i]; negated where ih ≠ 0
    const y0 = e.local(ValType.f64);
    F.set(fw, F.c(0));
    this.loop(() => e.get(jz).set(i), () => e.get(i).i32(0).op(Op.i32_ge_s), () => e.get(i).i32(1).op(Op.i32_sub).set(i), () => F.set(fw, F.add(F.get(fw), this.load(AT.fq, get(i)))));
    const signed = (v: Value) => F.select(() => e.get(ih).op(Op.i32_eqz), v, F.neg(v));
    F.set(y0, signed(F.get(fw)));
    F.set(fw, F.sub(this.load(AT.fq, i32(0)), F.get(fw)));
    this.loop(() => e.i32(1).set(i), () => e.get(i).get(jz).op(Op.i32_le_s), () => e.get(i).i32(1).op(Op.i32_add).set(i), () => F.set(fw, F.add(F.get(fw), this.load(AT.fq, get(i)))));
    const y1 = e.local(ValType.f64);
    F.set(y1, signed(F.get(fw)));
    e.get(n).i32(7).op(Op.i32_and).set(n);
    returnReduction(e, hx, y0, y1, n);
  }

  /** q[i] = Σ_j x[j]·f[jx + i − j] for the i in local `iLocal`. */
  private productTerm(iLocal: number): void {
    const { e, F } = this;
    const { jx, j, fw } = this.v;
    const get = (l: number) => () => void e.get(l);
    F.set(fw, F.c(0));
    this.loop(() => e.i32(0).set(j), () => e.get(j).get(jx).op(Op.i32_le_s), () => e.get(j).i32(1).op(Op.i32_add).set(j), () => {
      F.set(fw, F.add(F.get(fw), F.mul(this.load(AT.tx, get(j)), this.load(AT.f, () => e.get(jx).get(iLocal).op(Op.i32_add).get(j).op(Op.i32_sub)))));
    });
    this.store(AT.q, get(iLocal), F.get(fw));
  }

}

/** Ends a reduction of |x|: returns (y0, y1, n), or (−y0, −y1, −n) where x < 0 (hx its high word). */
export function returnReduction(e: FunctionEmitter, hx: number, y0: number, y1: number, n: number): void {
  e.get(hx).i32(0).op(Op.i32_lt_s).open('if');
  e.get(y0).op(Op.f64_neg).get(y1).op(Op.f64_neg);
  e.i32(0).get(n).op(Op.i32_sub).op(Op.return);
  e.close();
  e.get(y0).get(y1).get(n);
  e.op(Op.end);
}
