/**
 * How the Wasm engine computes each `Math` function (the table of functions: compiler/math-functions.ts).
 * emit-scalar.ts, emit-simd.ts and emit-rows.ts emit what an entry says, and engine.ts chooses the
 * engine of a kernel from it: a port that starts running in Wasm is one entry flipped here.
 */
import type { MathFunction } from '../../../compiler/math-functions.js';

export interface WasmMath {
  /**
   * In a scalar loop (and the tails of vector loops): Wasm instructions (`instructions`); a port of
   * V8's algorithm written in Wasm, bit for bit V8's result (`port`, math-ports.ts); or V8's own
   * `Math.*` called through an import (`import`: one call out of Wasm per element).
   */
  readonly scalar: 'instructions' | 'port' | 'import';
  /**
   * In float SIMD lanes: vector instructions (`instructions`), the port's own vector code (`port`),
   * or the scalar function called for each lane (`per-lane`).
   */
  readonly floatLanes: 'instructions' | 'port' | 'per-lane';
  /** Whether int32/uint32 lanes compute it with vector instructions (else such loops stay scalar). */
  readonly intLanes: boolean;
  /**
   * Where `auto` mode runs a kernel that calls it: in Wasm (`wasm`); in Wasm only where the call's
   * loop runs SIMD lanes (`lanes`: the scalar port is no faster than V8's `Math.*` in JS, see
   * engine.ts); or on the JS engine (`js`: a call out of Wasm per element costs more than JS).
   */
  readonly engine: 'wasm' | 'lanes' | 'js';
}

const native = (intLanes = false): WasmMath => ({ scalar: 'instructions', floatLanes: 'instructions', intLanes, engine: 'wasm' });
const imported: WasmMath = { scalar: 'import', floatLanes: 'per-lane', intLanes: false, engine: 'js' };
/**
 * A port of V8's algorithm (math-ports.ts, of the arity it has there: other arities are imported):
 * faster than V8's `Math.*` in lanes, not in scalar loops.
 */
const ported: WasmMath = { scalar: 'port', floatLanes: 'port', intLanes: false, engine: 'lanes' };

export const WASM_MATH: Readonly<Record<MathFunction, WasmMath>> = {
  abs: native(true),
  sign: native(),
  floor: native(),
  ceil: native(),
  round: native(),
  trunc: native(),
  // float64 → float32 in a scalar loop; lanes refuse a kernel mixing the two (emit-simd.ts).
  fround: { scalar: 'instructions', floatLanes: 'per-lane', intLanes: false, engine: 'wasm' },
  sqrt: native(),
  min: native(true),
  max: native(true),
  imul: { scalar: 'instructions', floatLanes: 'per-lane', intLanes: true, engine: 'wasm' },
  clz32: { scalar: 'instructions', floatLanes: 'per-lane', intLanes: false, engine: 'wasm' },
  // Ports of V8's algorithms (math-ports.ts; hypot of two arguments only: of more, V8's own).
  exp: ported, sin: ported, cos: ported, tan: ported, asin: ported, acos: ported, atan: ported, atan2: ported,
  log: ported, log1p: ported, log2: ported, log10: ported, expm1: ported, sinh: ported, cosh: ported, tanh: ported,
  cbrt: ported, pow: ported, hypot: ported,
  asinh: imported, acosh: imported, atanh: imported,
};
