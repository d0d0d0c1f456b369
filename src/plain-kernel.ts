/**
 * Plain-JS execution (`disableJit`, `UFUNC_DISABLE_JIT=1`, as Numba's `NUMBA_DISABLE_JIT`): a
 * call's plan run by calling the kernel as the JS function it is, on the calling thread, element
 * by element (vectorize) or row by row (guvectorize). Nothing is compiled, so `console.log`,
 * `debugger` and breakpoints in the kernel work. Array arguments are views that check every
 * index and refuse writes to inputs; elements are read as the compiled kernel reads them (bool as
 * `true`/`false`, 64-bit integers as bigints) and stored as the compiled kernel stores them. The
 * arithmetic between is JS's: docs/debugging.md lists where that differs from compiled code.
 */
import { DTYPES, type DType, type TypedArray } from './dtypes.js';
import { KernelRuntimeError, TargetUnavailableError } from './errors.js';
import type { KernelEnv } from './compiler/lower.js';
import { type CallPlan, type DeviceArrayLike, isDeviceResident, loopSize, type OperandView } from './plan.js';
import type { Target } from './targets/target.js';
import { limitExceeded } from './cancellation.js';
import { drawFloat64 } from './compiler/random-stream.js';
import type { PreparedCall } from './run-call.js';
import { tableDType } from './compiler/tables.js';

/** The kernel as a plain-JS call runs it. */
export interface PlainKernel {
  /** The function the user gave, or their source text (evaluated with `env`'s names in scope). */
  readonly fn: Function | string;
  readonly env: KernelEnv;
  /** Parameter names, for messages. */
  readonly params: readonly string[];
}

/**
 * Runs a plain-JS call to its end on the calling thread. Host operands only (a `runSync`).
 *
 * @param plan - the call's plan (its kernel is only a signature: nothing is compiled)
 * @param kernel - the function to call
 * @throws KernelRuntimeError for an index outside a view, or a write to an input; what the kernel
 *   throws, as it throws it
 * @example
 * runPlainSync(prepared.plan, { fn: (x) => x + 1, env: {}, params: ['x'] });
 */
export function runPlainSync(plan: CallPlan, kernel: PlainKernel): void {
  kernel = withCheckedTables(kernel);
  const fn = plainFunction(kernel);
  withEnvironment(kernel.env, () => runLoop(plan, fn, kernel.params));
}

/**
 * Runs a plain-JS call; device operands (the gpu target's) are copied to the host first and device
 * outputs back after, through the target's `readDevice`/`writeDevice`.
 *
 * @param plan - the call's plan
 * @param kernel - the function to call
 * @param target - the call's target, for its device memory
 * @returns when every output is written
 * @example
 * await runPlain(prepared.plan, kernel, gpuTarget);
 */
export async function runPlain(plan: CallPlan, kernel: PlainKernel, target: Target): Promise<void> {
  kernel = withCheckedTables(kernel);
  const fn = plainFunction(kernel);
  if (loopSize(plan) === 0 || !plan.operands.some((v) => isDeviceResident(v.data))) {
    withEnvironment(kernel.env, () => runLoop(plan, fn, kernel.params));
    return;
  }
  const { readDevice, writeDevice } = target;
  if (!readDevice || !writeDevice) {
    throw new TargetUnavailableError(`The '${target.name}' target cannot copy its device arrays to the host, so a kernel cannot run on them as plain JS (\`disableJit\`): pass host arrays, or make the ufunc without \`disableJit\`.`);
  }
  // Outputs that view one device memory (interleaved in one array) write one host copy of it, so
  // that copying it back keeps every output's writes.
  const memories = deviceMemories(plan);
  const hosts = await Promise.all(memories.map((m) => readDevice(m.span)));
  const operands = plan.operands.map((view, k) => {
    const m = memories.findIndex((memory) => memory.operands.includes(k));
    return m >= 0 ? { ...view, data: hosts[m]!, offset: view.offset - memories[m]!.low } : view;
  });
  withEnvironment(kernel.env, () => runLoop({ ...plan, operands }, fn, kernel.params));
  for (let m = 0; m < memories.length; m++) {
    if (memories[m]!.operands.some((k) => k >= plan.nin)) await writeDevice(memories[m]!.span, hosts[m]!);
  }
}

/**
 * The function a plain-JS call calls: the user's own (so breakpoints in their file hold), or their
 * source text evaluated with `env`'s names in scope.
 *
 * @param kernel - the kernel
 * @returns the function
 * @example
 * plainFunction({ fn: '(x) => x * K', env: { K: 2 }, params: ['x'] })(3); // 6
 */
export function plainFunction(kernel: PlainKernel): Function {
  if (typeof kernel.fn === 'function') return kernel.fn;
  const names = Object.keys(kernel.env);
  return new Function(...names, `return (${kernel.fn}\n);`)(...names.map((n) => kernel.env[n])) as Function;
}

/**
 * The kernel with each lookup table of `env` (compiler/tables.ts) as a checked read-only view, as
 * compiled kernels read tables: an index outside it and a write are KernelRuntimeErrors. A kernel
 * given as a function that closes over its own array reads that array, as JS does. Every way a
 * plain kernel is called goes through this: calls here, and the methods' folds (methods/context.ts).
 *
 * @param kernel - the kernel as the user gave it
 * @returns the same kernel, its tables in `env` replaced by checked views
 * @example
 * plainFunction(withCheckedTables({ fn: '(i) => LUT[i]', env: { LUT }, params: ['i'] }))(LUT.length); // throws
 */
export function withCheckedTables(kernel: PlainKernel): PlainKernel {
  const names = Object.keys(kernel.env).filter((name) => tableDType(kernel.env[name]) !== undefined);
  if (names.length === 0) return kernel;
  const env: Record<string, unknown> = { ...kernel.env };
  for (const name of names) {
    const data = kernel.env[name] as TypedArray;
    const view = { data, dtype: tableDType(data)!, offset: 0, loopStrides: [], coreShape: [data.length], coreStrides: [1] } as unknown as OperandView;
    const readOnly = `\`${name}\` is a lookup table from \`env\`, which kernels only read`;
    env[name] = checkedArray(view, 0, 0, { name, writable: false, where: () => '', readOnly });
  }
  return { ...kernel, env };
}

/**
 * Runs `body` with the names of `env` that are not globals already visible as globals: a kernel
 * compiled with `{ env: { K } }` sees `K` though its own scope may not; the plain function finds
 * it there. Removed again afterwards.
 */
function withEnvironment(env: KernelEnv, body: () => void): void {
  const scope = globalThis as Record<string, unknown>;
  const added = Object.keys(env).filter((name) => !(name in scope));
  for (const name of added) scope[name] = env[name];
  try {
    body();
  } finally {
    for (const name of added) delete scope[name];
  }
}

/** What a plain-JS call copies of the device to the host: a span of one memory, and the operands it holds. */
interface DeviceMemory {
  /** The elements the call touches, as one 1-D view: from the lowest to the highest any operand reaches. */
  readonly span: DeviceArrayLike;
  /** The span's first element, in the memory's elements. */
  readonly low: number;
  /** The operands (by position in the plan) that view this memory. */
  readonly operands: number[];
}

/**
 * The device operands to copy: each input alone, the outputs grouped by the memory they view
 * (`DeviceArrayLike.memory`; an array without one is a memory of its own) and dtype, each group with the span of elements its operands touch,
 * widened to 4-byte boundaries (device writes of 8- and 16-bit types are whole words).
 */
function deviceMemories(plan: CallPlan): DeviceMemory[] {
  const groups: { key: object; dtype: string; array: DeviceArrayLike; low: number; end: number; operands: number[] }[] = [];
  plan.operands.forEach((view, k) => {
    if (!isDeviceResident(view.data)) return;
    const array = view.data as unknown as DeviceArrayLike;
    // Inputs each their own copy, taken before the call (as the targets read inputs that overlap an
    // output: copied first); outputs one copy per memory, so that each sees the others' writes.
    const key = k < plan.nin ? {} : (array.memory ?? array);
    let low = view.offset;
    let high = view.offset;
    const reach = (extent: number, stride: number) => {
      if (stride < 0) low += stride * (extent - 1);
      else high += stride * (extent - 1);
    };
    plan.loopShape.forEach((n, d) => reach(n, view.loopStrides[d]!));
    view.coreShape.forEach((n, a) => reach(n, view.coreStrides[a]!));
    const perWord = Math.max(1, 4 / DTYPES[view.dtype].bytes);
    low = Math.floor(low / perWord) * perWord;
    const end = Math.ceil((high + 1) / perWord) * perWord;
    const group = groups.find((g) => g.key === key && g.dtype === view.dtype);
    if (!group) groups.push({ key, dtype: view.dtype, array, low, end, operands: [k] });
    else {
      group.low = Math.min(group.low, low);
      group.end = Math.max(group.end, end);
      group.operands.push(k);
    }
  });
  return groups.map((g) => ({ span: g.array.view([g.end - g.low], [1], g.low), low: g.low, operands: g.operands }));
}

/** Calls the kernel once per element (vectorize) or per row (guvectorize) of the loop, in C order. */
function runLoop(plan: CallPlan, fn: Function, params: readonly string[]): void {
  const key = plan.plainRandomKey;
  if (!key) return runLoopDrawing(plan, fn, params, () => undefined);
  // `Math.random()` in the kernel draws the call's stream (float64 draws) while the loop runs.
  const random = Math.random;
  let item = 0;
  let draw = 0;
  Math.random = () => drawFloat64(key[0], key[1], item, draw++);
  try {
    runLoopDrawing(plan, fn, params, (n) => ((item = n), (draw = 0)));
  } finally {
    Math.random = random;
  }
}

function runLoopDrawing(plan: CallPlan, fn: Function, params: readonly string[], startItem: (n: number) => void): void {
  const { operands, nin, loopShape } = plan;
  const total = loopSize(plan);
  const index = new Array<number>(loopShape.length).fill(0);
  const bases = operands.map((v) => v.offset);
  const isScalar = operands.map((v) => v.coreShape.length === 0);
  // Where in the loop a failing row is, for messages: read while the kernel runs.
  const where = () => (loopShape.length === 0 ? '' : `, in the row at loop index [${index.join(', ')}]`);
  for (let n = 0; n < total; n++) {
    startItem(n);
    if (plan.kind === 'vectorize') {
      const args = new Array<unknown>(nin);
      for (let i = 0; i < nin; i++) args[i] = readElement(operands[i]!, bases[i]!);
      const result = fn(...args);
      const out = operands[nin]!;
      (out.data as TypedArray)[bases[nin]!] = storedValue(out.dtype, result) as never;
    } else {
      const args = operands.map((v, k) =>
        isScalar[k] ? readElement(v, bases[k]!) : checkedArray(v, bases[k]!, 0, { name: params[k] ?? `argument ${k + 1}`, writable: k >= nin, where }),
      );
      fn(...args);
    }
    // The next loop position: the last axis moves fastest.
    for (let d = loopShape.length - 1; d >= 0; d--) {
      index[d]!++;
      operands.forEach((v, k) => (bases[k] = bases[k]! + v.loopStrides[d]!));
      if (index[d]! < loopShape[d]! || d === 0) break;
      operands.forEach((v, k) => (bases[k] = bases[k]! - v.loopStrides[d]! * loopShape[d]!));
      index[d] = 0;
    }
  }
}

/** An element as the compiled kernel reads it: bool as a boolean, 64-bit integers as bigints, others as numbers. */
function readElement(view: OperandView, at: number): unknown {
  if (view.scalar !== undefined) return view.scalar;
  const value = (view.data as TypedArray)[at];
  return view.dtype === 'bool' ? value !== 0 : value;
}

/**
 * A value as the compiled kernel stores it into an array of `dtype` (docs/kernel-language.md,
 * rule 10): what the typed array's own store does, and where that throws or differs, the
 * compiled conversion — anything → bool is `x != 0` (NaN false); a number into a 64-bit integer
 * truncates and wraps (NaN, ±Infinity → 0); a bigint into a narrower integer wraps.
 */
export function storedValue(dtype: DType, value: unknown): unknown {
  if (dtype === 'bool') return value ? 1 : 0;
  const { kind, bits } = DTYPES[dtype];
  if (bits === 64 && kind !== 'f') {
    if (typeof value === 'bigint') return value;
    if (typeof value === 'boolean') return value ? 1n : 0n;
    const x = Number(value);
    return Number.isFinite(x) ? BigInt(Math.trunc(x)) : 0n;
  }
  if (typeof value !== 'bigint') return value;
  if (kind === 'f') return Number(value);
  if (dtype === 'uint8c') return value < 0n ? 0 : value > 255n ? 255 : Number(value);
  return Number(kind === 'u' ? BigInt.asUintN(bits, value) : BigInt.asIntN(bits, value));
}

/**
 * A core slice as a plain-JS kernel sees it: `a[i]` (a row view for 2-D slices, `a[i][j]`),
 * `a.length`, `a.shape`; every index checked, writes only to outputs. `console.log(a)` prints
 * its elements.
 */
function checkedArray(view: OperandView, base: number, axis: number, operand: ViewedOperand): unknown {
  const { name, writable, where } = operand;
  const shape = view.coreShape.slice(axis);
  const length = shape[0]!;
  const stride = view.coreStrides[axis]!;
  const last = axis === view.coreShape.length - 1;
  const data = view.data as TypedArray;
  const at = (key: string): number => {
    const i = Number(key);
    if (!Number.isInteger(i) || i < 0 || i >= length) {
      throw new KernelRuntimeError(`Index ${key} is outside \`${name}\`${view.coreShape.length > 1 ? ` on axis ${axis}` : ''}, whose length is ${length}${where()} (the kernel runs as plain JS, \`disableJit\`, where every index is checked; the stack shows the line).`);
    }
    return base + i * stride;
  };
  const element = (key: string) => (last ? readElement(view, at(key)) : checkedArray(view, at(key), axis + 1, operand));
  const elements = () => Array.from({ length }, (_, i) => element(String(i)));
  const shown = new KernelArrayView(name, view.dtype, shape, elements);
  return new Proxy(shown, {
    get(target, key, receiver) {
      if (typeof key === 'string' && isIndexKey(key)) return element(key);
      if (key === 'length') return length;
      if (key === 'shape') return shape;
      return Reflect.get(target, key, receiver);
    },
    set(_target, key, value) {
      if (!writable) throw new KernelRuntimeError(`${operand.readOnly ?? `\`${name}\` is an input; a kernel writes only its outputs`}${where()}.`);
      if (typeof key !== 'string' || !isIndexKey(key)) throw new KernelRuntimeError(`\`${name}.${String(key)}\` cannot be assigned: a kernel writes only the elements of its outputs.`);
      if (!last) throw new KernelRuntimeError(`\`${name}[${key}]\` is a row of a ${view.coreShape.length}-D slice; assign its elements, \`${name}[${key}][j] = …\`.`);
      data[at(key)] = storedValue(view.dtype, value) as never;
      return true;
    },
  });
}

/** An array argument of a plain-JS kernel, for messages. */
interface ViewedOperand {
  readonly name: string;
  readonly writable: boolean;
  /** Where in the call's loop the kernel is running (`, in the row at loop index [2]`), or ''. */
  readonly where: () => string;
  /** What a write says when not writable, if not that it is an input (a lookup table's). */
  readonly readOnly?: string;
}

/** Whether a property key is an array index as JS writes it (`"3"`, and the out-of-range `"-1"`, `"1.5"`, `"NaN"`). */
function isIndexKey(key: string): boolean {
  return key !== '' && String(Number(key)) === key;
}

/** What a checked view wraps: how `console.log` (Node's inspect) and `String(a)` show it. */
class KernelArrayView {
  constructor(
    readonly name: string,
    readonly dtype: DType,
    readonly shape: readonly number[],
    private readonly elements: () => unknown[],
  ) {}

  [Symbol.iterator](): Iterator<unknown> {
    return this.elements()[Symbol.iterator]();
  }

  toString(): string {
    return this.elements().map(String).join(',');
  }

  [Symbol.for('nodejs.util.inspect.custom')](_depth: number, options: object, inspect: (v: unknown, o: object) => string): string {
    return `${this.dtype}[${this.shape.join('×')}] ${inspect(this.elements(), options)}`;
  }
}

/**
 * A call of a plain-JS ufunc (`disableJit`): planned as any call (operands, dispatch, outputs in
 * the target's containers), then run by {@link runPlain} instead of the target's compiled code.
 *
 * @param call - the prepared call
 * @param kernel - the function to call
 * @returns what the call returns (call-finish.ts)
 * @example
 * if (call.plain) return runPreparedPlain(call, call.plain); // run-call.ts's runPrepared
 */
export async function runPreparedPlain(call: PreparedCall, kernel: PlainKernel): Promise<unknown> {
  const stop = limitExceeded(call.plan.limits, call.target.name);
  if (stop) throw stop; // an already aborted signal: nothing runs
  for (const { output, shape, dtype } of call.deviceOutputs) {
    call.setDeviceOutput(output, await call.target.allocateDeviceArray!(shape, dtype));
  }
  await runPlain(call.plan, kernel, call.target);
  return call.finish();
}

/** How `explain` describes a plain-JS call. */
export function explainPlain(plan: CallPlan): string {
  const each = plan.kind === 'vectorize' ? 'element' : 'row';
  return `Plain JavaScript on the calling thread (\`disableJit\` or UFUNC_DISABLE_JIT): the kernel is called as the function it is, once per ${each} (${loopSize(plan)} calls), over views that check every index; nothing is compiled.`;
}
