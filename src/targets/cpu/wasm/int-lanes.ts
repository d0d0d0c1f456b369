/**
 * Element-wise kernels on 8- and 16-bit integers computed in lanes of their own width — 16 lanes
 * of 8 bits (i8x16) or 8 of 16 bits (i16x8) — where that gives exactly the int32 arithmetic the
 * kernel language prescribes (rule 4: small integers take part as int32): which kernels qualify,
 * and how (emit-int-lanes.ts emits them).
 *
 * A lane holds an int32 value exactly when the value lies in its range: [−32768, 32767] for
 * signed 16 bits, [0, 255] for unsigned 8 bits (uint8/uint8c kernels), [−128, 127] for signed 8
 * bits (int8 kernels). So a kernel qualifies when an interval analysis proves that every integer
 * value it computes lies there, with two exceptions that are exact too:
 * - ring operations (+ − × & | ^ `<<` negation `~`) whose result is converted to a type that
 *   keeps only the lane's low bits (int16, int8, uint8): arithmetic modulo 2^bits commutes with
 *   them, so `a + b` stored to int16 is `i16x8.add`;
 * - the saturating idiom: an addition or subtraction of values that fit, followed only by
 *   `Math.min`/`Math.max` with constants (or a uint8c store), adds with saturation
 *   (`i16x8.add_sat_s`, `i8x16.add_sat_u`…): the clamp f is monotone, so f(sat(x)) = f(x) wherever
 *   f is constant beyond the lane's bounds over x's range — checked numerically, f evaluated at
 *   both bounds and at both ends of x's range. `Math.min(Math.max(a + b, -32768), 32767)` on
 *   int16 qualifies; `Math.max(a + b, -5)` does not.
 *
 * Not qualifying (the kernel then runs 32-bit lanes, emit-simd.ts): floats anywhere, uint32,
 * uint16 operands, `/` and `%`, `>>>` of a value that may be negative, a variable assigned after
 * its declaration, helpers, loops; for 8-bit lanes also `*` (no i8x16 multiply), shifts by 8 or
 * more, operands or results wider than 8 bits.
 */
import type { DType } from '../../../dtypes.js';
import type { Expr, Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';

/** Inclusive bounds of a value. */
type Range = readonly [number, number];

/** The lanes: their width, signedness, and the values they hold exactly. */
export interface IntLanes {
  readonly bits: 8 | 16;
  readonly signed: boolean;
}
const LANE_RANGE = (l: IntLanes): Range => (l.bits === 16 ? [-32768, 32767] : l.signed ? [-128, 127] : [0, 255]);

const OPERAND_RANGE: Partial<Record<DType, Range>> = {
  int8: [-128, 127], uint8: [0, 255], uint8c: [0, 255], int16: [-32768, 32767], bool: [0, 1],
};

const INT_TYPES: ReadonlySet<DType> = new Set<DType>(['int32', 'uint32', 'int8', 'uint8', 'uint8c', 'int16', 'uint16']);

/**
 * The value of a conversion to an integer type as an int32 expression, where it is float64 only
 * because of its literals — `p > t ? 255 : 0` stored to uint8 is a select of doubles (the
 * language's rule 1) — or undefined. Integer literals in int32 range, and selects of them: the
 * conversion of such a double is the integer itself, so lanes compute it in int32 lanes instead
 * of float64 ones.
 */
export function integralSource(e: Expr): Expr | undefined {
  if (e.kind !== 'cast' || !INT_TYPES.has(e.type) || e.value.type !== 'float64') return undefined;
  const retype = (x: Expr): Expr | undefined => {
    if (x.kind === 'const') {
      const v = x.value;
      return typeof v === 'number' && Number.isInteger(v) && Math.abs(v) < 2 ** 31 && !Object.is(v, -0) ? { ...x, type: 'int32' } : undefined;
    }
    if (x.kind === 'select') {
      const then = retype(x.then);
      const otherwise = retype(x.otherwise);
      return then && otherwise ? { ...x, type: 'int32', then, otherwise } : undefined;
    }
    return undefined;
  };
  return retype(e.value);
}

/** How a kernel computes in narrow integer lanes: which, and the sums done with saturation. */
export interface IntLanesPlan {
  readonly lanes: IntLanes;
  readonly saturated: ReadonlySet<Expr>;
}

class Refusal extends Error {}

/**
 * The narrow integer lanes an element-wise kernel computes in — 8 bits where every operand and
 * the result are 8-bit and the kernel qualifies, else 16 bits — or why it computes in 32-bit lanes.
 */
export function intLanesPlan(kernel: TypedKernel): IntLanesPlan | string {
  const types = [...kernel.params.map((p) => p.type), kernel.returnType];
  const bytes = types.map((t) => (t === 'int8' || t === 'uint8' || t === 'uint8c' ? 1 : 2));
  const attempt = (lanes: IntLanes): IntLanesPlan | string => {
    try {
      return analyse(kernel, lanes);
    } catch (error) {
      if (error instanceof Refusal) return error.message;
      throw error;
    }
  };
  if (bytes.every((b) => b === 1)) {
    const signed = types.some((t) => t === 'int8');
    const unsigned = types.some((t) => t === 'uint8' || t === 'uint8c');
    if (!(signed && unsigned)) {
      const plan = attempt({ bits: 8, signed });
      if (typeof plan !== 'string') return plan;
    }
  }
  return attempt({ bits: 16, signed: true });
}

function analyse(kernel: TypedKernel, lanes: IntLanes): IntLanesPlan {
  const LANE = LANE_RANGE(lanes);
  const fits = (r: Range, within: Range = LANE) => r[0] >= within[0] && r[1] <= within[1];
  const width = `${lanes.bits} bits`;
  const refuse = (why: string): never => {
    throw new Refusal(why);
  };
  if (kernel.helpers.length) refuse('it calls helpers');
  const ranges = new Map<Variable, Range>();
  for (const p of [...kernel.params]) {
    const r = typeof p.type === 'string' ? OPERAND_RANGE[p.type] : undefined;
    if (!r) refuse(`an operand is ${typeof p.type === 'string' ? p.type : 'an array'}`);
    ranges.set(p, r!);
  }
  if (!OPERAND_RANGE[kernel.returnType as DType] || kernel.returnType === 'bool') refuse(`the result is ${String(kernel.returnType)}`);
  const saturated = new Set<Expr>();

  const range = (e: Expr): Range => {
    const r = rangeOf(e);
    if (!fits(r)) refuse(`a value at kernel line ${e.loc.line}:${e.loc.column} may leave ${width}`);
    return r;
  };
  /** The exact interval of an integer expression (not yet checked against 16 bits). */
  const rangeOf = (e: Expr): Range => {
    if (e.type !== 'bool' && !OPERAND_RANGE[e.type] && e.type !== 'int32') refuse(`it computes in ${e.type}`);
    switch (e.kind) {
      case 'const': {
        const v = Number(e.value);
        if (!Number.isInteger(v)) refuse('a constant is not an integer');
        return [v, v];
      }
      case 'var': {
        const r = ranges.get(e.variable);
        if (!r) refuse(`\`${e.variable.name}\` is read before it is known`);
        return r!;
      }
      case 'unary': {
        const [lo, hi] = range(e.arg);
        if (e.op === '-') return [-hi, -lo];
        if (e.op === '~') return [-hi - 1, -lo - 1];
        if (e.op === '!') return [0, 1];
        return refuse(`the operator \`${e.op}\``);
      }
      case 'binary': {
        const a = range(e.left);
        // A shift count is a constant (of any integer type), not a lane value.
        const b = ['<<', '>>', '>>>'].includes(e.op) ? a : range(e.right);
        switch (e.op) {
          case '+': return [a[0] + b[0], a[1] + b[1]];
          case '-': return [a[0] - b[1], a[1] - b[0]];
          case '*': {
            if (lanes.bits === 8) return refuse('`*` has no 8-bit lane instruction');
            const p = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]];
            return [Math.min(...p), Math.max(...p)];
          }
          // Bitwise operations of two values of the lanes' range give one of that range.
          case '&': case '|': case '^': return LANE;
          case '<<': case '>>': case '>>>': {
            if (e.right.kind !== 'const') return refuse('a shift count varies per element');
            const k = Number(e.right.value) & 31;
            // 8-bit lanes take shift counts modulo 8; a right shift by more keeps a bit.
            if (lanes.bits === 8 && k >= 8) return refuse('a shift by 8 or more');
            if (e.op === '<<') return [a[0] * 2 ** k, a[1] * 2 ** k];
            if (e.op === '>>>' && a[0] < 0) return refuse('`>>>` of a value that may be negative');
            return [Math.floor(a[0] / 2 ** k), Math.floor(a[1] / 2 ** k)];
          }
          default: return refuse(`the operator \`${e.op}\``);
        }
      }
      case 'compare':
        range(e.left);
        range(e.right);
        return [0, 1];
      case 'logical':
        range(e.left);
        range(e.right);
        return [0, 1];
      case 'select': {
        range(e.cond);
        const [a, b] = [range(e.then), range(e.otherwise)];
        return [Math.min(a[0], b[0]), Math.max(a[1], b[1])];
      }
      case 'cast': {
        const integral = integralSource(e);
        if (integral) return rangeOf({ ...e, value: integral });
        // int16, int8, uint8 keep the low bits of the int32 value: + − × & | ^ << and negation are
        // exact modulo 2¹⁶ (a ring homomorphism), so 16-bit lanes compute those bits whatever the
        // range of the value (its operands must fit, to be exact in the lanes).
        if ((e.type === 'int16' || e.type === 'int8' || e.type === 'uint8') && ring(e.value)) return fits(OPERAND_RANGE[e.type]!) ? OPERAND_RANGE[e.type]! : refuse(`a conversion to ${e.type}`);
        const from = rangeOf(e.value);
        const to = e.type === 'int32' ? LANE : OPERAND_RANGE[e.type];
        // What the conversion gives must be held by the lanes (an 8-bit lane holds int8's or uint8's values).
        if (to && !fits(to) && e.type !== 'int32' && e.type !== 'bool') refuse(`a conversion to ${e.type}`);
        if (!to) return refuse(`a conversion to ${e.type}`);
        if (e.type === 'int32' || e.type === 'bool') {
          if (!fits(from)) refuse(`a value at kernel line ${e.loc.line}:${e.loc.column} may leave ${width}`);
          return e.type === 'bool' ? [0, 1] : from;
        }
        if (!fits(from)) {
          // Converting a sum that may leave ${width} wraps or clamps the int32 value: only a
          // clamp (uint8c) of a saturated sum is the same (the clamp bounds lie inside 16 bits).
          if (e.type !== 'uint8c' || !saturable(e.value)) refuse(`a value at kernel line ${e.loc.line}:${e.loc.column} may leave ${width}`);
          saturated.add(e.value);
        }
        return fits(from, to) ? from : to;
      }
      case 'math': {
        if (e.fn === 'min' || e.fn === 'max') return clamp(e);
        if (e.fn === 'abs') {
          const [lo, hi] = range(e.args[0]!);
          return [lo >= 0 ? lo : hi <= 0 ? -hi : 0, Math.max(Math.abs(lo), Math.abs(hi))];
        }
        if (e.fn === 'imul') return rangeOf({ ...e, kind: 'binary', op: '*', left: e.args[0]!, right: e.args[1]! } as Expr);
        return refuse(`Math.${e.fn}`);
      }
      default:
        return refuse(`it reads arrays or calls helpers`);
    }
  };
  /** An expression of ring operations (+ − × & | ^ <<, −, ~) over values that fit 16 bits. */
  const ring = (e: Expr): boolean => {
    if (e.kind === 'binary' && ['+', '-', '&', '|', '^'].includes(e.op)) return ring(e.left) && ring(e.right);
    if (e.kind === 'binary' && e.op === '*' && lanes.bits === 16) return ring(e.left) && ring(e.right);
    // Lanes take shift counts modulo their width: larger counts are not a ring operation here.
    if (e.kind === 'binary' && e.op === '<<' && e.right.kind === 'const' && (Number(e.right.value) & 31) < lanes.bits) return ring(e.left);
    if (e.kind === 'unary' && (e.op === '-' || e.op === '~')) return ring(e.arg);
    range(e);
    return true;
  };
  /** An addition or subtraction whose operands fit 16 bits (its result may not). */
  const saturable = (e: Expr): boolean => e.kind === 'binary' && (e.op === '+' || e.op === '-') && fits(rangeOf(e.left)) && fits(rangeOf(e.right));
  /**
   * `Math.min`/`Math.max` (nested, with constants): the interval of the result; an argument that
   * may leave ${width} is allowed where saturating it changes no result (see the module comment).
   */
  const clamp = (e: Extract<Expr, { kind: 'math' }>): Range => {
    // Find the one non-constant leaf of a min/max nest with constant arguments.
    const leaves: Expr[] = [];
    const walk = (x: Expr): void => {
      if (x.kind === 'math' && (x.fn === 'min' || x.fn === 'max')) x.args.forEach(walk);
      else if (x.kind !== 'const') leaves.push(x);
    };
    walk(e);
    const f = (v: number): number => {
      const go = (x: Expr): number => {
        if (x.kind === 'math' && (x.fn === 'min' || x.fn === 'max')) return (x.fn === 'min' ? Math.min : Math.max)(...x.args.map(go));
        if (x.kind === 'const') return Number(x.value);
        return v;
      };
      return go(e);
    };
    const leaf = leaves.length === 1 ? leaves[0]! : undefined;
    if (leaf && !fits(rangeOf(leaf)) && saturable(leaf)) {
      const [lo, hi] = rangeOf(leaf);
      const same = (a: number, b: number) => f(a) === f(b);
      if (!same(Math.max(lo, LANE[0]), lo) || !same(Math.min(hi, LANE[1]), hi)) refuse(`a value at kernel line ${leaf.loc.line}:${leaf.loc.column} may leave ${width}`);
      saturated.add(leaf);
      const out: Range = [f(Math.max(lo, LANE[0])), f(Math.min(hi, LANE[1]))];
      if (!fits(out)) refuse(`a value at kernel line ${e.loc.line}:${e.loc.column} may leave ${width}`);
      for (const x of constantsOf(e)) if (!fits([x, x])) refuse(`a constant does not fit ${width}`);
      return out;
    }
    const rs = e.args.map(range);
    return e.fn === 'min' ? [Math.min(...rs.map((r) => r[0])), Math.min(...rs.map((r) => r[1]))] : [Math.max(...rs.map((r) => r[0])), Math.max(...rs.map((r) => r[1]))];
  };

  const assigned = new Set<Variable>();
  const stmts = (list: readonly Stmt[]): void => {
    for (const s of list) {
      switch (s.kind) {
        case 'let':
          if (assigned.has(s.variable)) refuse(`\`${s.variable.name}\` is assigned again`);
          assigned.add(s.variable);
          ranges.set(s.variable, s.variable.type === 'bool' ? (rangeOf(s.init), [0, 1]) : range(s.init));
          break;
        case 'if':
          range(s.cond);
          stmts(s.then);
          stmts(s.otherwise);
          break;
        case 'return':
          // The result converted to the result type (a cast, which may wrap or clamp), or a value that fits.
          if (s.value) (s.value.kind === 'cast' ? rangeOf : range)(s.value);
          break;
        default:
          refuse(`the kernel has a ${s.kind} statement`);
      }
    }
  };
  stmts(kernel.body);
  return { lanes, saturated };
}

function constantsOf(e: Expr): number[] {
  if (e.kind === 'const') return [Number(e.value)];
  if (e.kind === 'math' && (e.fn === 'min' || e.fn === 'max')) return e.args.flatMap(constantsOf);
  return [];
}
