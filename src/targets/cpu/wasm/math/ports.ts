/**
 * The ports of V8's logarithms, powers and hyperbolic functions (log, log1p, log2, log10, expm1,
 * sinh, cosh, tanh, cbrt, pow and `**`, hypot of two arguments), as entries of the table of ports
 * (../math-ports.ts): each a scalar Wasm function `fdlibm:<name>` written line by line from V8's C
 * with c-ops.ts, and lanes that run its vector code (lanes.ts's `vectorPort`) or, without any,
 * call the scalar function per lane.
 */
import type { MathFunction } from '../../../../compiler/ir.js';
import { ValType } from '../encoder.js';
import type { FunctionEmitter } from '../emit-scalar.js';
import type { KnownArguments, LaneShape, MathPort, PortFunction } from '../math-port.js';
import { CBRT_LANES, emitCbrt } from './cbrt.js';
import { COSH_LANES, emitCosh, emitExpm1, emitSinh, emitTanh, EXPM1_LANES, hyperbolic32Lanes, SINH_LANES, TANH_LANES } from './hyperbolic.js';
import { emitHypot, HYPOT_LANES } from './hypot.js';
import { vectorPort, type VectorCode } from './lanes.js';
import { emitLog, emitLog10, emitLog1p, emitLog2, LOG10_LANES, LOG1P_LANES, LOG2_LANES, LOG_LANES } from './log.js';
import { emitPow, POW_LANES } from './pow.js';

interface Port {
  readonly arity: 1 | 2;
  /** The ports (of one argument) its scalar function calls. */
  readonly calls?: readonly MathFunction[];
  /** Emits the scalar function's body; `port(fn)` is the index of one of `calls`. */
  scalar(e: FunctionEmitter, port: (fn: MathFunction) => number): void;
  /**
   * Pushes the function of the vectors in locals `args`; `scalar` is the scalar function's index;
   * `known`, the arguments the kernel gives as constants.
   */
  lanes(e: FunctionEmitter, args: readonly number[], shape: LaneShape, scalar: number, known?: KnownArguments): void;
}

const withVectorCode = (code: VectorCode): Port['lanes'] => (e, args, shape, scalar, known) => vectorPort(code, e, args, shape, scalar, known);

/** Vector code, and for float32 in 4 lanes a cheaper approximation with a rounding test first (hyperbolic.ts). */
const withFloat32Approximation = (fn: 'expm1' | 'sinh' | 'cosh' | 'tanh', code: VectorCode): Port['lanes'] => (e, args, shape, scalar) => {
  const exact = () => vectorPort(code, e, args, shape, scalar);
  if (shape === 'f32x4') hyperbolic32Lanes(fn, e, args[0]!, exact);
  else exact();
};

const PORTS: Partial<Record<MathFunction, Port>> = {
  log: { arity: 1, scalar: emitLog, lanes: withVectorCode(LOG_LANES) },
  log1p: { arity: 1, scalar: emitLog1p, lanes: withVectorCode(LOG1P_LANES) },
  log2: { arity: 1, scalar: emitLog2, lanes: withVectorCode(LOG2_LANES) },
  log10: { arity: 1, calls: ['log'], scalar: (e, port) => emitLog10(e, port('log')), lanes: withVectorCode(LOG10_LANES) },
  expm1: { arity: 1, scalar: emitExpm1, lanes: withFloat32Approximation('expm1', EXPM1_LANES) },
  sinh: { arity: 1, calls: ['expm1', 'exp'], scalar: (e, port) => emitSinh(e, port('expm1'), port('exp')), lanes: withFloat32Approximation('sinh', SINH_LANES) },
  cosh: { arity: 1, calls: ['expm1', 'exp'], scalar: (e, port) => emitCosh(e, port('expm1'), port('exp')), lanes: withFloat32Approximation('cosh', COSH_LANES) },
  tanh: { arity: 1, calls: ['expm1'], scalar: (e, port) => emitTanh(e, port('expm1')), lanes: withFloat32Approximation('tanh', TANH_LANES) },
  cbrt: { arity: 1, scalar: emitCbrt, lanes: withVectorCode(CBRT_LANES) },
  pow: { arity: 2, scalar: emitPow, lanes: withVectorCode(POW_LANES) },
  hypot: { arity: 2, scalar: (e) => emitHypot(e, 2), lanes: withVectorCode(HYPOT_LANES) },
};

const entry = (fn: MathFunction) => `fdlibm:${fn}`;

/** Their scalar functions, by name. */
export const LOG_POWER_FUNCTIONS: Readonly<Record<string, PortFunction>> = Object.fromEntries(
  Object.entries(PORTS).map(([fn, port]) => [entry(fn as MathFunction), {
    params: Array<ValType>(port.arity).fill(ValType.f64),
    results: [ValType.f64],
    calls: (port.calls ?? []).map(entry),
    emit: (e: FunctionEmitter, index: (name: string) => number) => port.scalar(e, (called) => index(entry(called))),
  } satisfies PortFunction]),
);

/** Their lanes: the arguments are taken off the stack into locals (first argument deepest). */
export const LOG_POWER_PORTS: Partial<Record<MathFunction, MathPort>> = Object.fromEntries(
  Object.entries(PORTS).map(([fn, port]) => [fn, {
    arity: port.arity,
    lanes: (e: FunctionEmitter, scalar: number, shape: LaneShape, known?: KnownArguments) => {
      const args = Array.from({ length: port.arity }, () => e.local(ValType.v128));
      for (let i = port.arity - 1; i >= 0; i--) e.set(args[i]!);
      port.lanes(e, args, shape, scalar, known);
    },
  } satisfies MathPort]),
);
