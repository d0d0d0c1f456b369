/**
 * The fast path for the most common call: a vectorize ufunc on plain typed arrays of one length
 * and JS numbers, with or without one `out` array. The general path (prepare-call.ts `prepareCall`)
 * checks, broadcasts and builds a plan from scratch; here a call whose argument kinds match an
 * earlier call reuses that call's signature, kernel and plan shape, so a small call costs little
 * more than the loop itself. Any call that does not fit takes the general path.
 */
import { convertConstant } from './compiler/lower.js';
import { DTYPES, dtypeOfArray, type TypedArray } from './dtypes.js';
import { isDetached } from './ndarray.js';
import type { CallPlan, FastEntry, OperandView } from './plan.js';
import type { UfuncDefinition } from './ufunc.js';

export type { FastEntry } from './plan.js';

const NO_DIMS: readonly number[] = [];

/**
 * The memory a scalar operand nominally lives in. Targets on the fast path read scalars from
 * `OperandView.scalar`; the placeholder only has to be an array of its own — pointing a scalar at
 * the output's memory would make the parallel target see an input overlapping the output and run
 * the whole call on one thread.
 */
const placeholders = new Map<OperandView['dtype'], TypedArray>();
function placeholderFor(dtype: OperandView['dtype']): TypedArray {
  let p = placeholders.get(dtype);
  if (!p) placeholders.set(dtype, (p = new DTYPES[dtype].arrayType(1) as TypedArray));
  return p;
}
const UNIT: readonly number[] = [1];
const BROADCAST: readonly number[] = [0];

/** Array kinds, numbered for keys (Uint8ClampedArray is left to the general path). */
const ARRAY_KINDS: readonly Function[] = [
  Float32Array, Float64Array, Int32Array, Uint32Array, Int16Array, Uint16Array, Int8Array, Uint8Array, BigInt64Array, BigUint64Array,
];

/**
 * A key for the kinds of the arguments, or undefined when the call is not a fast one: five bits an
 * argument, so the key is a number (a string key, built and hashed on every call, cost more than
 * the rest of a small call). Numbers are told apart by the signatures that accept them.
 */
export function fastKey(def: UfuncDefinition, args: readonly unknown[]): number | undefined {
  const nin = def.nin;
  if (def.kind !== 'vectorize' || nin > 8) return undefined;
  let key = 1;
  let length = -1;
  for (let i = 0; i < nin; i++) {
    const x = args[i];
    if (typeof x === 'number') {
      key = key * 32 + 16 + numberClass(x);
      continue;
    }
    const kind = typeof x === 'object' && x !== null ? ARRAY_KINDS.indexOf(x.constructor) : -1;
    if (kind < 0) return undefined;
    // A detached array reads as empty: leave it to the general path, which refuses it.
    if ((x as TypedArray).length === 0 && isDetached(x as TypedArray)) return undefined;
    if (length !== -1 && (x as TypedArray).length !== length) return undefined;
    length = (x as TypedArray).length;
    key = key * 32 + kind;
  }
  const out = onlyOut(args, nin);
  if (out === null) return key;
  if (out === undefined) return undefined;
  const kind = ARRAY_KINDS.indexOf(out.constructor);
  if (kind < 0 || (out as TypedArray).length !== (length === -1 ? 1 : length)) return undefined;
  if ((out as TypedArray).length === 0 && isDetached(out as TypedArray)) return undefined;
  return key * 32 + kind;
}

/**
 * Numbers of one class are accepted by the same signatures: fractional (floats only), or an
 * integer within the same bounds of the integer types (int8 … uint32). Classes 0 … 11.
 */
export function numberClass(x: number): number {
  if (!Number.isInteger(x)) return 0;
  if (x >= 0) return x <= 127 ? 1 : x <= 255 ? 2 : x <= 32767 ? 3 : x <= 65535 ? 4 : x <= 2147483647 ? 5 : x <= 4294967295 ? 6 : 7;
  return x >= -128 ? 8 : x >= -32768 ? 9 : x >= -2147483648 ? 10 : 11;
}

/**
 * Builds the plan of a fast call, or undefined where it must take the general path (an `out` that
 * shares memory with an input other than being that very input).
 */
export function fastPlan(
  entry: FastEntry,
  args: readonly unknown[],
  nin: number,
  allocate?: (length: number, dtype: OperandView['dtype']) => TypedArray,
): { plan: CallPlan; result: TypedArray | undefined; out: TypedArray } | undefined {
  let length = 1;
  let anyArray = false;
  for (let i = 0; i < nin; i++) {
    const x = args[i];
    if (typeof x !== 'number') {
      // A typed array's length, or a (1-D) device array's size.
      length = (x as TypedArray).length ?? (x as unknown as { size: number }).size;
      anyArray = true;
    }
  }
  const given = args.length > nin ? ((args[nin] as { out: TypedArray }).out) : undefined;
  if (given) {
    for (let i = 0; i < nin; i++) {
      const x = args[i];
      if (typeof x !== 'number' && x !== given && bytesOverlap(x as TypedArray, given)) return undefined;
    }
  }
  const out = given ?? allocate?.(length, entry.outputType) ?? (new DTYPES[entry.outputType].arrayType(length) as TypedArray);
  const operands: OperandView[] = [];
  for (let i = 0; i < nin; i++) {
    const x = args[i];
    const dtype = entry.inputTypes[i]!;
    if (typeof x === 'number') {
      operands.push({ dtype, data: placeholderFor(dtype), offset: 0, loopStrides: BROADCAST, coreShape: NO_DIMS, coreStrides: NO_DIMS, scalar: convertConstant(x, dtype) });
    } else {
      operands.push({ dtype, data: x as TypedArray, offset: 0, loopStrides: UNIT, coreShape: NO_DIMS, coreStrides: NO_DIMS });
    }
  }
  operands.push({ dtype: entry.outputType, data: out, offset: 0, loopStrides: UNIT, coreShape: NO_DIMS, coreStrides: NO_DIMS });
  // Written out rather than spread: spreading here cost more than the rest of a small call.
  const template = entry.plan;
  const plan: CallPlan = {
    kind: template.kind, kernel: template.kernel, kernelKey: template.kernelKey, nin: template.nin, boundsCheck: template.boundsCheck,
    operands, loopShape: anyArray ? [length] : NO_DIMS,
  };
  return { plan, result: given ?? (anyArray ? out : undefined), out };
}

/** Whether the arrays of a fast call have the dtypes the entry's signature reads (no conversion). */
export function fastDtypesMatch(entry: FastEntry, args: readonly unknown[], nin: number): boolean {
  for (let i = 0; i < nin; i++) {
    const x = args[i];
    if (typeof x !== 'number' && dtypeOfArray(x) !== entry.inputTypes[i]) return false;
  }
  return true;
}

/** The dtypes a device array may have, numbered for {@link deviceFastKey}. */
const DEVICE_KINDS: readonly string[] = ['float32', 'int32', 'uint32', 'int16', 'uint16', 'int8', 'uint8', 'bool', 'uint8c'];

/** The number of a device array's dtype (0 … 8) for fast-path keys, or -1 for anything else. */
export function deviceKind(x: unknown): number {
  if (typeof x !== 'object' || x === null || (x as { kind?: unknown }).kind !== 'device') return -1;
  return DEVICE_KINDS.indexOf((x as { dtype: string }).dtype);
}

/** A 1-D, contiguous device array starting at its buffer's first element: what the fast path binds as is. */
interface PlainDeviceArray {
  readonly kind: 'device';
  readonly dtype: string;
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly offset: number;
  readonly size: number;
}
function plainDeviceKind(x: unknown): number {
  const kind = deviceKind(x);
  if (kind < 0) return -1;
  const d = x as PlainDeviceArray;
  if (d.shape.length !== 1 || d.offset !== 0 || (d.strides[0] !== 1 && d.size > 1)) return -1;
  return kind;
}

/**
 * {@link fastKey} for calls on device targets: a vectorize call whose arrays are all 1-D,
 * contiguous device arrays of one size (and JS numbers), with or without one such `out`. Its keys
 * start from 2 (host keys from 1), so the two never collide in `fastEntries`.
 */
export function deviceFastKey(def: UfuncDefinition, args: readonly unknown[]): number | undefined {
  const nin = def.nin;
  if (def.kind !== 'vectorize' || nin > 8) return undefined;
  let key = 2;
  let size = -1;
  for (let i = 0; i < nin; i++) {
    const x = args[i];
    if (typeof x === 'number') {
      key = key * 32 + 16 + numberClass(x);
      continue;
    }
    const kind = plainDeviceKind(x);
    if (kind < 0) return undefined;
    const n = (x as PlainDeviceArray).size;
    if (size !== -1 && n !== size) return undefined;
    size = n;
    key = key * 32 + kind;
  }
  if (size === -1) return undefined; // scalars only: the general path
  const out = onlyOut(args, nin);
  if (out === null) return key;
  const kind = plainDeviceKind(out);
  if (kind < 0 || (out as PlainDeviceArray).size !== size) return undefined;
  return key * 32 + 8 + kind;
}

/**
 * What follows a fast call's inputs: null for nothing, the `out` of an options object that holds
 * only `out` (an object), or undefined for anything else (the general path's business).
 */
export function onlyOut(args: readonly unknown[], nin: number): object | null | undefined {
  if (args.length === nin) return null;
  if (args.length !== nin + 1) return undefined;
  const options = args[nin] as { out?: unknown } | null;
  if (typeof options !== 'object' || options === null || ArrayBuffer.isView(options)) return undefined;
  let count = 0;
  for (const _ in options) count++;
  const out = options.out;
  return count === 1 && typeof out === 'object' && out !== null ? out : undefined;
}

/**
 * Whether two views share bytes. Arrays in the Wasm engine's memory all share one buffer, so
 * comparing buffers would send every call on them down the general path.
 */
function bytesOverlap(a: TypedArray, b: TypedArray): boolean {
  return a.buffer === b.buffer && a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength;
}
