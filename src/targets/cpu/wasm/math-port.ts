/**
 * What a port of a `Math` function to Wasm consists of (the table of ports: math-ports.ts), and
 * the lane plumbing ports share: float32 shapes through f64x2 halves, and the scalar fallback for
 * lanes the vector code does not compute.
 */
import { Op, SimdOp, ValType } from './encoder.js';
import type { FunctionEmitter } from './emit-scalar.js';

/** How the vector(s) given to `lanes` hold their values. */
export type LaneShape =
  /** two doubles */
  | 'f64x2'
  /** four float32 values */
  | 'f32x4'
  /** float32 values in lanes 0 and 1 (2-lane code); lanes 2 and 3 hold nothing */
  | 'f32x2';

/** What e_pow.c decides on an exponent that is not special: whether it is an integer, and odd. */
export type YParity = 'odd' | 'even' | 'not an integer';

/**
 * pow's exponent where it is the same for a whole call but known only when the call runs (a
 * scalar argument, `x ** gamma`): decided once, before the vector loops (call-exponent.ts), as a
 * literal exponent's code decides it at compile time — each loop runs for one `parity` of y, with
 * y1 and y2 (y = y1 + y2, e_pow.c's split) in v128 locals.
 */
export interface ExponentOfCall {
  readonly parity: YParity;
  /** v128 locals holding y1 and y2 in both lanes. */
  readonly y1: number;
  readonly y2: number;
}

/**
 * Per argument of a port, the number in every lane where the kernel passes a constant (a literal);
 * where the value is the same for the whole call but known only when it runs, what the code
 * before the loops decided on it (`ExponentOfCall`); else undefined.
 */
export type KnownArguments = readonly (number | ExponentOfCall | undefined)[];

/** A function a port adds to the module. */
export interface PortFunction {
  readonly params: readonly ValType[];
  readonly results: readonly ValType[];
  /** What its code calls: other port functions (`fdlibm:…`) and V8's `Math.*` imports (`sin/1`). */
  readonly calls: readonly string[];
  /**
   * Whether its last parameter is the address of the calling thread's scratch area (the one that
   * holds the kernel's local arrays), for itself or a function it calls.
   */
  readonly takesScratch?: boolean;
  /** Bytes of the scratch area it uses, at the offset the module gives (`emit`'s `scratchOffset`). */
  readonly scratchBytes?: number;
  /**
   * Emits the body (parameters are locals 0…); `index(name)` is the index of a name in `calls`;
   * `scratchOffset` is where its `scratchBytes` start in the scratch area.
   */
  emit(e: FunctionEmitter, index: (name: string) => number, scratchOffset: number): void;
}

/** A `Math` function computed in Wasm. */
export interface MathPort {
  readonly arity: 1 | 2;
  /**
   * Replaces the `arity` vectors on the stack (first argument deepest) by one holding the function
   * of each lane, rounded to float32 once in the float32 shapes (`Math.fround(Math.f(x))`).
   * `scalar` is the index of the scalar entry `fdlibm:<name>` (which `e.scratch` is passed to
   * where it takes the scratch area). `known[i]`: the number in every lane of argument i where
   * the kernel passes a constant (a float32 constant as the double it promotes to), else
   * undefined; a port may decide on it at compile time what its lanes would decide per vector.
   * An exponent of the call: what the code before the loops decided on it (call-exponent.ts).
   */
  lanes(e: FunctionEmitter, scalar: number, shape: LaneShape, known?: KnownArguments): void;
}

/**
 * The computation of a port in f64x2 lanes: `compute` gets locals holding the arguments (f64x2)
 * and pushes the result and then the mask of lanes it computed correctly (all ones), in that
 * order; lanes outside the mask are not used, and a vector with any such lane calls the scalar
 * entry lane by lane instead.
 */
export type LaneBody = (e: FunctionEmitter, args: readonly number[]) => void;

/**
 * Emits `body` for the shape: float32 lanes are promoted to f64x2 halves (lanes 0–1, then 2–3),
 * computed, and rounded back to float32 once, as `Math.fround(Math.f(x))` does.
 */
export function emitLanes(e: FunctionEmitter, scalar: number, shape: LaneShape, arity: 1 | 2, body: LaneBody, takesScratch = false): void {
  const args = Array.from({ length: arity }, () => e.local(ValType.v128));
  for (let i = arity - 1; i >= 0; i--) e.set(args[i]!);
  if (shape === 'f64x2') return emitF64x2(e, scalar, args, body, takesScratch);
  const halves = shape === 'f32x4' ? 2 : 1;
  const wide = args.map(() => e.local(ValType.v128));
  for (let h = 0; h < halves; h++) {
    args.forEach((a, i) => {
      e.get(a);
      if (h === 1) e.get(a).shuffle([8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15]);
      e.simd(SimdOp.f64x2_promote_low_f32x4).set(wide[i]!);
    });
    emitF64x2(e, scalar, wide, body, takesScratch);
    e.simd(SimdOp.f32x4_demote_f64x2_zero);
  }
  // Lanes 0–1 of the first half, then lanes 0–1 of the second.
  if (halves === 2) e.shuffle([0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]);
}

function emitF64x2(e: FunctionEmitter, scalar: number, args: readonly number[], body: LaneBody, takesScratch: boolean): void {
  const result = e.local(ValType.v128);
  const ok = e.local(ValType.i32);
  body(e, args);
  e.simd(SimdOp.i64x2_all_true).set(ok);
  e.set(result);
  e.get(ok);
  e.open('if', ValType.v128);
  e.get(result);
  e.else();
  e.get(result);
  for (let lane = 0; lane < 2; lane++) {
    for (const a of args) {
      e.get(a).simd(SimdOp.f64x2_extract_lane);
      e.code.byte(lane);
    }
    if (takesScratch) e.get(e.scratch);
    e.code.byte(Op.call).u32(scalar);
    e.simd(SimdOp.f64x2_replace_lane);
    e.code.byte(lane);
  }
  e.close();
}
