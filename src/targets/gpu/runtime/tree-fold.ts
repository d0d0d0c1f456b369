/**
 * Tree reductions and scans on the device, for `reduce` and `accumulate` of an associative kernel
 * (`{ associative: true }`): the gpu's answer to CuPy's `sum`/`cumsum`. The shader and its order
 * of operations are fold-shader.ts's; this module plans the passes and records them.
 *
 * `reduce`: a row of n elements is cut into runs of consecutive blocks, about
 * {@link TARGET_GROUPS} workgroups in all (rows × runs per row), so that a large GPU is full; each
 * run folds to a partial result, and the partials of a row fold as a row of their own (the same
 * shader, recursively, until one is left), then `initial` is folded on the left. All passes are
 * recorded into the open batch of calls (one compute pass, no host round trip).
 * `accumulate`: reduce-then-scan — the runs' totals (a reduce pass), their scan (recursively), then
 * each run scanned from the scanned total of the runs before it: the input is read twice and the
 * output written once.
 *
 * Scope: vectorize kernels whose loop is `T(T, T)` with T any dtype the gpu runs (fold-shader.ts's
 * TREE_DTYPES), inputs that are DeviceArrays of T no larger than a storage binding, `where` masks
 * and `out` arrays on the device. Anything else returns `undefined` and methods.ts folds rows with
 * its fold kernels (in order, one invocation per row).
 */
import type { TypedKernel } from '../../../compiler/ir.js';
import { convertConstant } from '../../../compiler/constant-folding.js';
import { type DType, DTYPES } from '../../../dtypes.js';
import { KernelCompileError } from '../../../errors.js';
import { cOrderStrides, sizeOf } from '../../../layout.js';
import type { ArrayOperand, DeviceOperand } from '../../../plan.js';
import type { FoldKernels } from '../../target.js';
import { bufferBytes, releaseBuffer, takeBuffer } from './buffer-pool.js';
import { beginCall, endCall, noteWrite, taintsOf } from './chain.js';
import { DeviceArray, noteKernelWrite, outputArray, outputArrayNow, toDevice } from './device-array.js';
import { type GpuContext, liveDevice, runScoped, withDevice } from './device.js';
import { BLOCK, FIXED, FLAG, foldShader, TREE_DTYPES, UNROLL } from '../codegen/fold-shader.js';
import { passTiming } from './kernel-timing.js';

/** Workgroups a pass aims for (rows × runs per row): enough to fill a large GPU (an H100 holds about 1,056 of 256 invocations). */
const TARGET_GROUPS = 1024;
/** Row dimensions the shader decomposes a row number into (more are refused: fold kernels run them). */
const MAX_ROW_RANK = 8;

/** How a region's elements are stored: the dtype's own packing, value words (partials), or (value, presence) word pairs. */
type Format = 'dtype' | 'words' | 'pairs';

/** A strided region of a device buffer seen as rows × n. */
interface Rows {
  readonly buffer: GPUBuffer;
  readonly offset: number;
  /** The row dimensions (a row number is decomposed over them, C order). */
  readonly rowShape: readonly number[];
  readonly rowStrides: readonly number[];
  /** Stride between consecutive elements of a row. */
  readonly step: number;
  readonly format: Format;
}

interface FoldPipelines {
  readonly reduce: GPUComputePipeline;
  readonly scan: GPUComputePipeline;
  readonly layout: GPUBindGroupLayout;
  /**
   * Bind groups made, newest first, found again by the very buffers they bind: a repeated
   * call binds the same ones (creating a bind group costs Dawn more than recording the dispatch,
   * and comparing a few references costs less than building a key string per dispatch).
   */
  readonly groups: BoundGroup[];
  /** A small buffer bound where a binding is unused (a binding may not be left empty). */
  readonly dummy: GPUBuffer;
}

/** A bind group of the fold layout and what it binds. */
interface BoundGroup {
  readonly group: GPUBindGroup;
  readonly params: GPUBuffer;
  readonly bytes: number;
  readonly x: GPUBuffer;
  readonly out: GPUBuffer;
  readonly carry: GPUBuffer;
  readonly mask: GPUBuffer;
  readonly vec: boolean;
}

const pipelines = new WeakMap<GPUDevice, Map<string, Promise<FoldPipelines>>>();

/** Whether folds use subgroup operations where the device has them (a switch for tests of the workgroup-memory path). */
let useSubgroups = true;

/**
 * Turns the use of subgroup operations off or on (internal: tests run both paths on a device that
 * has subgroups). Folds compiled afterwards follow it.
 *
 * @param on whether to use them where the device has the `subgroups` feature
 */
export function setFoldSubgroups(on: boolean): void {
  useSubgroups = on;
}
const MAX_BIND_GROUPS = 64;
/** The dynamic offset of a dispatch's params (one array reused: a fresh literal per call costs more to pass to Dawn). */
const PARAMS_OFFSET = [0];

/** Fold pipelines whose compilation has finished, by its promise: a later fold records without awaiting. */
const compiled = new WeakMap<Promise<FoldPipelines>, FoldPipelines>();

function foldPipelines(ctx: GpuContext, kernel: TypedKernel, key: string, dtype: DType): Promise<FoldPipelines> {
  let map = pipelines.get(ctx.device);
  if (!map) pipelines.set(ctx.device, (map = new Map()));
  const cacheKey = `${key}:${dtype}:${useSubgroups}`;
  let p = map.get(cacheKey);
  if (!p) {
    const compiling = compileFold(ctx, kernel, dtype);
    compiling.then((ready) => compiled.set(compiling, ready), () => map!.delete(cacheKey));
    map.set(cacheKey, (p = compiling));
  }
  return p;
}

/** The fold pipelines when already compiled, else undefined. */
function readyPipelines(ctx: GpuContext, kernel: TypedKernel, key: string, dtype: DType): FoldPipelines | undefined {
  const p = pipelines.get(ctx.device)?.get(`${key}:${dtype}:${useSubgroups}`);
  return p && compiled.get(p);
}

/**
 * Records a fold: at once, without a Promise layer per step, when the device is live, the fold's
 * pipelines compiled and its output to be had now (`prepare` returns undefined where the tree does
 * not apply); else after acquiring the device and compiling.
 */
function recordFold(
  typed: { kernel: TypedKernel; key: string },
  dtype: DType,
  output: { readonly given?: DeviceArray; readonly shape: readonly number[] },
  prepare: (ctx: GpuContext) => ((p: FoldPipelines, result: DeviceArray) => void) | undefined,
): Promise<DeviceArray | undefined> {
  try {
    const ctx = liveDevice();
    const ready = ctx && readyPipelines(ctx, typed.kernel, typed.key, dtype);
    if (ctx && ready) {
      const record = prepare(ctx);
      if (!record) return Promise.resolve(undefined);
      const result = output.given ?? outputArrayNow(output.shape, dtype);
      if (result) {
        record(ready, result);
        return Promise.resolve(result);
      }
    }
  } catch (e) {
    return Promise.reject(e);
  }
  return withDevice(async (ctx) => {
    const record = prepare(ctx);
    if (!record) return undefined;
    const p = await foldPipelines(ctx, typed.kernel, typed.key, dtype);
    const result = output.given ?? (await outputArray(output.shape, dtype));
    record(p, result);
    return result;
  });
}

async function compileFold(ctx: GpuContext, kernel: TypedKernel, dtype: DType): Promise<FoldPipelines> {
  const code = foldShader(kernel, dtype, ctx.hasSubgroups && useSubgroups);
  const { device } = ctx;
  return runScoped(ctx, async () => {
    const module = device.createShaderModule({ code, label: `ufunc tree fold ${kernel.name}` });
    const info = await module.getCompilationInfo();
    const errors = info.messages.filter((m) => m.type === 'error');
    if (errors.length) {
      const lines = code.split('\n');
      throw new KernelCompileError(
        `The gpu target generated a tree reduction for \`${kernel.name}\` that does not compile (a bug in ufunc; please report it with this message):\n${errors
          .map((m) => `${m.lineNum}:${m.linePos}: ${m.message}\n    ${lines[m.lineNum - 1]?.trim() ?? ''}`)
          .join('\n')}`,
      );
    }
    const storage = (type: GPUBufferBindingType, binding: number): GPUBindGroupLayoutEntry => ({ binding, visibility: GPUShaderStage.COMPUTE, buffer: { type } });
    const layout = device.createBindGroupLayout({
      entries: [
        { binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'read-only-storage', hasDynamicOffset: true } },
        storage('read-only-storage', 1),
        storage('storage', 2),
        storage('read-only-storage', 3),
        storage('read-only-storage', 4),
        storage('read-only-storage', 5),
      ],
    });
    const pipelineLayout = device.createPipelineLayout({ bindGroupLayouts: [layout] });
    const [reduce, scan] = await Promise.all(
      ['reduce_main', 'scan_main'].map((entryPoint) => device.createComputePipelineAsync({ layout: pipelineLayout, compute: { module, entryPoint } })),
    );
    const dummy = device.createBuffer({ size: 256, usage: GPUBufferUsage.STORAGE, label: 'ufunc tree fold: unused binding' });
    return { reduce: reduce!, scan: scan!, layout, groups: [], dummy };
  });
}

/** What a tree fold needs of the ufunc: its kernel for loop T(T, T), or undefined where it cannot run one. */
function treeKernel(fold: FoldKernels, dtype: DType): { kernel: TypedKernel; key: string } | undefined {
  if (!TREE_DTYPES.includes(dtype)) return undefined;
  const typed = fold.kernelFor(dtype);
  // The fold shaders bind no lookup tables: such a kernel folds the ordinary way.
  if (!typed || typed.kernel.tables?.length) return undefined;
  const { params, returnType } = typed.kernel;
  if (returnType === 'void') {
    // A (),()->() gufunc's loop void(T[:], T[:], T[:]): one-element arrays in and out.
    const ok = params.length === 3 && params.every((p) => typeof p.type === 'object' && (p.type as { dtype?: DType }).dtype === dtype);
    return ok ? typed : undefined;
  }
  if (params.length !== 2 || returnType !== dtype || params.some((p) => p.type !== dtype)) return undefined;
  return typed;
}

/** The operand's buffer, if it can be bound whole (tree folds do not split bindings). */
function bindable(ctx: GpuContext, op: DeviceOperand, dtype: DType): GPUBuffer | undefined {
  const array = op.array as unknown as DeviceArray;
  if (op.dtype !== dtype || bufferBytes(array.buffer) > ctx.limits.maxStorageBufferBindingSize) return undefined;
  return array.buffer;
}

/** The buffers one dispatch binds. */
interface Bound {
  readonly x: GPUBuffer;
  readonly out: GPUBuffer;
  readonly carry?: GPUBuffer;
  readonly mask?: GPUBuffer;
  /** Whether x is read 16 bytes at a time (bound again as vec4 words). */
  readonly vec: boolean;
}

/** Records the dispatches of one tree fold into the device's open batch. */
class Recorder {
  /** Temporary buffers (partials, run totals), handed back to the pool by `finish`. */
  private readonly temporaries: GPUBuffer[] = [];
  private lastBatch: { onSubmit(fn: () => void): void } | undefined;

  constructor(
    readonly ctx: GpuContext,
    readonly p: FoldPipelines,
    readonly dtype: DType,
    readonly name: string,
  ) {}

  temporary(words: number): GPUBuffer {
    const { buffer } = takeBuffer(this.ctx, Math.max(16, words * 4));
    this.temporaries.push(buffer);
    return buffer;
  }

  private bindGroup(b: Bound, params: GPUBuffer, bytes: number): GPUBindGroup {
    const { dummy, groups } = this.p;
    const carry = b.carry ?? dummy;
    const mask = b.mask ?? dummy;
    for (const g of groups) {
      if (g.x === b.x && g.out === b.out && g.params === params && g.bytes === bytes && g.carry === carry && g.mask === mask && g.vec === b.vec) return g.group;
    }
    const maxBinding = this.ctx.limits.maxStorageBufferBindingSize;
    const whole = (buffer: GPUBuffer) => ({ buffer, offset: 0, size: Math.min(bufferBytes(buffer), maxBinding) });
    const vecBytes = b.vec ? Math.floor(Math.min(bufferBytes(b.x), maxBinding) / 16) * 16 : 0;
    const group = this.ctx.device.createBindGroup({
      layout: this.p.layout,
      entries: [
        { binding: 0, resource: { buffer: params, offset: 0, size: bytes } },
        { binding: 1, resource: whole(b.x) },
        { binding: 2, resource: whole(b.out) },
        { binding: 3, resource: whole(carry) },
        { binding: 4, resource: whole(mask) },
        { binding: 5, resource: vecBytes ? { buffer: b.x, offset: 0, size: vecBytes } : whole(dummy) },
      ],
    });
    if (groups.length >= MAX_BIND_GROUPS) groups.pop();
    groups.unshift({ group, params, bytes, x: b.x, out: b.out, carry, mask, vec: b.vec });
    return group;
  }

  dispatch(pipeline: GPUComputePipeline, params: Uint32Array, b: Bound, groups: number): void {
    const rec = beginCall(this.ctx, this.name, params, undefined);
    const bindGroup = this.bindGroup(b, rec.params, Math.max(16, params.length * 4));
    const timing = passTiming(this.ctx);
    const pass = timing?.begins ? rec.batch.beginTimedPass(timing.timestampWrites) : rec.batch.computePass();
    // What the open pass has set already stays set (the previous fold's pipeline and bindings,
    // in a chain of equal folds); the batch tracks it for every call recorded into it.
    if (rec.batch.lastPipeline !== pipeline) pass.setPipeline(pipeline);
    rec.batch.lastPipeline = pipeline;
    if (!rec.batch.sameBindings(bindGroup, rec.paramsOffset, -1)) {
      PARAMS_OFFSET[0] = rec.paramsOffset;
      pass.setBindGroup(0, bindGroup, PARAMS_OFFSET);
    }
    // The workgroups over dimensions x, y (x within the device's per-dimension limit).
    const x = Math.min(groups, this.ctx.limits.maxComputeWorkgroupsPerDimension);
    pass.dispatchWorkgroups(x, Math.ceil(groups / x));
    // Errors of the calls that produced the inputs travel to whatever reads the output.
    noteWrite(b.out, rec.ref, [...taintsOf(b.x), ...(b.carry ? taintsOf(b.carry) : []), ...(b.mask ? taintsOf(b.mask) : [])]);
    this.lastBatch = rec.batch;
    if (timing?.ends) {
      rec.batch.endPass();
      timing.resolve(rec.encoder);
      rec.batch.onSubmit(() => timing.collect());
      rec.batch.submit();
    } else endCall(rec, bufferBytes(b.x));
  }

  /** Hands the temporaries back to the pool once the batch of the last dispatch is submitted (later users come after it in queue order). */
  finish(): void {
    const temps = this.temporaries.splice(0);
    const ctx = this.ctx;
    if (temps.length && this.lastBatch) this.lastBatch.onSubmit(() => temps.forEach((b) => releaseBuffer(ctx, b)));
  }
}

/** Whether x's rows can be read as 16-byte vectors: 32-bit elements, unit step, every row starting at a multiple of 4. */
function vectorRows(dtype: DType, x: Rows): boolean {
  const bytes = x.format === 'dtype' ? DTYPES[dtype].bytes : x.format === 'words' ? 4 : 8;
  return bytes === 4 && x.step === 1 && x.offset % 4 === 0 && x.rowStrides.every((s) => s % 4 === 0) && bufferBytes(x.buffer) >= 16;
}

interface PassParams {
  readonly rows: number;
  readonly n: number;
  readonly runs: number;
  readonly blocksPerRun: number;
  readonly x: Rows;
  readonly out: Rows;
  /** out step: between a row's run results (reduce), or between its scanned elements (scan). */
  readonly outStep: number;
  readonly flags: number;
  readonly initialBits?: number;
  readonly mask?: Rows;
}

function paramsOf(a: PassParams): Uint32Array {
  const rank = a.x.rowShape.length;
  const p = new Uint32Array(FIXED + 4 * rank);
  p[0] = a.rows;
  p[1] = a.n;
  p[2] = a.runs;
  p[3] = a.blocksPerRun;
  p[4] = a.x.offset;
  p[5] = a.x.step >>> 0;
  p[6] = a.out.offset;
  p[7] = a.outStep >>> 0;
  p[8] = rank;
  p[9] = a.flags;
  p[10] = a.initialBits ?? 0;
  p[11] = a.mask?.offset ?? 0;
  p[12] = (a.mask?.step ?? 0) >>> 0;
  for (let d = 0; d < rank; d++) {
    p[FIXED + d] = a.x.rowShape[d]!;
    p[FIXED + rank + d] = a.x.rowStrides[d]! >>> 0;
    p[FIXED + 2 * rank + d] = a.out.rowStrides[d]! >>> 0;
    p[FIXED + 3 * rank + d] = (a.mask?.rowStrides[d] ?? 0) >>> 0;
  }
  return p;
}

function formatFlags(x: Rows, out: Rows): number {
  let flags = 0;
  if (x.format === 'words') flags |= FLAG.WORDS_IN;
  if (x.format === 'pairs') flags |= FLAG.PAIRS_IN;
  if (out.format === 'words') flags |= FLAG.WORDS_OUT;
  if (out.format === 'pairs') flags |= FLAG.PAIRS_OUT;
  return flags;
}

function bitsOf(value: number | bigint | boolean, dtype: DType): number {
  const v = Number(convertConstant(value, dtype));
  if (dtype === 'float32') return new Uint32Array(Float32Array.of(v).buffer)[0]!;
  return v >>> 0;
}

/** Row dimensions with size-1 ones dropped (fewer params, and a rank the shader takes). */
function compactRows(shape: readonly number[], ...strides: (readonly number[])[]): { shape: number[]; strides: number[][] } {
  const keep = shape.map((s, d) => (s !== 1 ? d : -1)).filter((d) => d >= 0);
  return { shape: keep.map((d) => shape[d]!), strides: strides.map((st) => keep.map((d) => st[d]!)) };
}

/** Runs per row and blocks per run for rows of n elements (runs of whole unrolled iterations where a run has several). */
function runsOf(rows: number, n: number): { runs: number; blocksPerRun: number } {
  const blocks = Math.ceil(n / BLOCK);
  const wanted = Math.min(blocks, Math.max(1, Math.ceil(TARGET_GROUPS / rows)));
  // Whole iterations of UNROLL blocks where the row has them (a run's loads then go out together).
  let blocksPerRun = Math.max(Math.ceil(blocks / wanted), Math.min(blocks, UNROLL));
  blocksPerRun = Math.ceil(blocksPerRun / UNROLL) * UNROLL;
  return { runs: Math.ceil(blocks / blocksPerRun), blocksPerRun };
}

/** Partials [rows, runs] in C order, as rows of their own. */
function partialRows(rec: Recorder, x: Rows, runs: number, format: Format): Rows {
  const rows = sizeOf(x.rowShape);
  const buffer = rec.temporary(rows * runs * (format === 'pairs' ? 2 : 1));
  return { buffer, offset: 0, rowShape: x.rowShape, rowStrides: cOrderStrides(x.rowShape).map((s) => s * runs), step: 1, format };
}

/**
 * Folds rows [...kept, n] of `x` into `out` (one result per row), all on the device; `initial`
 * (bits) is folded in on the left; `mask` leaves elements out. Returns when recorded.
 */
function reduceRows(rec: Recorder, x: Rows, n: number, out: Rows, initial: number | undefined, mask: Rows | undefined): void {
  const rows = sizeOf(x.rowShape);
  const { runs, blocksPerRun } = runsOf(rows, n);
  const vec = !mask && vectorRows(rec.dtype, x);
  const flagsIn = (vec ? FLAG.VEC : 0) | (mask ? FLAG.MASK : 0);
  if (runs === 1) {
    const flags = flagsIn | formatFlags(x, out) | (initial === undefined ? 0 : FLAG.INITIAL);
    const params = paramsOf({ rows, n, runs, blocksPerRun, x, out, outStep: 0, flags, initialBits: initial, mask });
    rec.dispatch(rec.p.reduce, params, { x: x.buffer, out: out.buffer, mask: mask?.buffer, vec }, rows);
    return;
  }
  // A masked fold may leave a run empty: its partials carry their presence.
  const partials = partialRows(rec, x, runs, mask || x.format === 'pairs' ? 'pairs' : 'words');
  const params = paramsOf({ rows, n, runs, blocksPerRun, x, out: partials, outStep: 1, flags: flagsIn | formatFlags(x, partials), mask });
  rec.dispatch(rec.p.reduce, params, { x: x.buffer, out: partials.buffer, mask: mask?.buffer, vec }, rows * runs);
  reduceRows(rec, partials, runs, out, initial, undefined);
}

/** The running fold of rows of `x` into `out` (same row layout), all on the device. */
function scanRows(rec: Recorder, x: Rows, n: number, out: Rows, outStep: number): void {
  const rows = sizeOf(x.rowShape);
  const { runs, blocksPerRun } = runsOf(rows, n);
  const vec = vectorRows(rec.dtype, x);
  let carry: GPUBuffer | undefined;
  let flags = formatFlags(x, out) | (vec ? FLAG.VEC : 0);
  if (runs > 1) {
    // The runs' totals [rows, runs], then their running fold: run g starts from the total of runs 0 … g−1.
    const totals = partialRows(rec, x, runs, 'words');
    const scanned = partialRows(rec, x, runs, 'words');
    const reduceFlags = (vec ? FLAG.VEC : 0) | formatFlags(x, totals);
    rec.dispatch(rec.p.reduce, paramsOf({ rows, n, runs, blocksPerRun, x, out: totals, outStep: 1, flags: reduceFlags }), { x: x.buffer, out: totals.buffer, vec }, rows * runs);
    scanRows(rec, totals, runs, scanned, 1);
    carry = scanned.buffer;
    flags |= FLAG.CARRY;
  }
  rec.dispatch(rec.p.scan, paramsOf({ rows, n, runs, blocksPerRun, x, out, outStep, flags }), { x: x.buffer, out: out.buffer, carry, vec }, rows * runs);
}

/** Extra operands of a tree reduce: a `where` mask laid out as the rows, an `out` of the kept shape. */
export interface TreeReduceExtras {
  readonly mask?: ArrayOperand | DeviceOperand;
  readonly out?: DeviceOperand;
}

/**
 * `reduce` by a tree on the device, or undefined where the tree does not apply (then methods.ts
 * folds rows in order). Host rows (and a host mask) are copied to the device first and the result
 * copied back.
 *
 * @param fold the ufunc's associative loop T(T, T), from the front
 * @param rows the array viewed as [...kept, n]: the folded axes merged into the last
 * @param initial the fold's start, if any
 * @param extras `mask` (bool, the shape of `rows`), `out` (T, shape `kept`, on the device)
 * @returns `out`; else a new DeviceArray of shape `kept` for device rows, a host `{ data, shape }` for host rows
 */
export function treeReduce(fold: FoldKernels, rows: ArrayOperand | DeviceOperand, initial: number | bigint | boolean | undefined, extras: TreeReduceExtras = {}): Promise<unknown> {
  const dtype = rows.dtype;
  const n = rows.shape[rows.shape.length - 1]!;
  const keptShape = rows.shape.slice(0, -1);
  if (n === 0 || sizeOf(keptShape) === 0) return NOT_APPLICABLE;
  const { mask, out } = extras;
  if (mask && (mask.dtype !== 'bool' || mask.shape.length !== rows.shape.length)) return NOT_APPLICABLE;
  if (out && (out.dtype !== dtype || out.shape.length !== keptShape.length || out.shape.some((s, d) => s !== keptShape[d]))) return NOT_APPLICABLE;
  const typed = treeKernel(fold, dtype);
  if (!typed) return NOT_APPLICABLE;
  // Device operands: recorded at once where it can be (no Promise layer of this function's).
  if (rows.kind === 'device' && (!mask || mask.kind === 'device')) return treeReduceOnDevice(fold, typed, rows, initial, mask as DeviceOperand | undefined, out);
  return treeReduceOfHostRows(fold, typed, rows, initial, mask, out);
}
const NOT_APPLICABLE: Promise<undefined> = Promise.resolve(undefined);

/** {@link treeReduce} with host operands, which go to the device first (and the result back, when it was not given an `out`). */
async function treeReduceOfHostRows(
  fold: FoldKernels,
  typed: { kernel: TypedKernel; key: string },
  rows: ArrayOperand | DeviceOperand,
  initial: number | bigint | boolean | undefined,
  mask: ArrayOperand | DeviceOperand | undefined,
  out: DeviceOperand | undefined,
): Promise<unknown> {
  // Their copies are destroyed after the fold is recorded: buffers are reused in queue order.
  const copies: DeviceArray[] = [];
  const onDevice = async (op: ArrayOperand | DeviceOperand): Promise<DeviceOperand> => {
    if (op.kind === 'device') return op;
    const array = await toDevice({ data: op.data, shape: op.shape, strides: op.strides, offset: op.offset, dtype: op.dtype });
    copies.push(array);
    return { kind: 'device', array, dtype: array.dtype, shape: array.shape, strides: array.strides, offset: array.offset };
  };
  try {
    const result = await treeReduceOnDevice(fold, typed, await onDevice(rows), initial, mask && (await onDevice(mask)), out);
    if (!result || out || rows.kind === 'device') return result;
    const data = await result.toHost();
    result.destroy();
    return { data, shape: rows.shape.slice(0, -1) };
  } finally {
    for (const c of copies) c.destroy();
  }
}

function treeReduceOnDevice(
  fold: FoldKernels,
  typed: { kernel: TypedKernel; key: string },
  rows: DeviceOperand,
  initial: number | bigint | boolean | undefined,
  mask: DeviceOperand | undefined,
  out: DeviceOperand | undefined,
): Promise<DeviceArray | undefined> {
  const dtype = rows.dtype;
  const n = rows.shape[rows.shape.length - 1]!;
  const keptShape = rows.shape.slice(0, -1);
  return recordFold(typed, dtype, { given: out?.array as unknown as DeviceArray | undefined, shape: keptShape }, (ctx) => {
    const buffer = bindable(ctx, rows, dtype);
    const maskBuffer = mask ? bindable(ctx, mask, 'bool') : undefined;
    const outBuffer = out ? bindable(ctx, out, dtype) : undefined;
    const keptStrides = rows.strides.slice(0, -1);
    const resultStrides = out ? out.strides : cOrderStrides(keptShape);
    const maskStrides = mask ? mask.strides.slice(0, -1) : keptShape.map(() => 0);
    const compact = compactRows(keptShape, keptStrides, resultStrides, maskStrides);
    if (!buffer || (mask && !maskBuffer) || (out && !outBuffer) || compact.shape.length > MAX_ROW_RANK) return undefined;
    // A result written over its own input would be read and written by one dispatch.
    if (outBuffer && (outBuffer === buffer || outBuffer === maskBuffer)) return undefined;
    if (sizeOf(keptShape) * Math.ceil(n / BLOCK) > 2 ** 31) return undefined;
    (rows.array as unknown as DeviceArray).assertUsable();
    if (mask) (mask.array as unknown as DeviceArray).assertUsable();
    if (out) (out.array as unknown as DeviceArray).assertUsable();
    return (p, result) => {
      const rec = new Recorder(ctx, p, dtype, `${fold.name}.reduce`);
      const x: Rows = { buffer, offset: rows.offset, rowShape: compact.shape, rowStrides: compact.strides[0]!, step: rows.strides[rows.strides.length - 1]!, format: 'dtype' };
      const o: Rows = { buffer: result.buffer, offset: out ? out.offset : 0, rowShape: compact.shape, rowStrides: compact.strides[1]!, step: 0, format: 'dtype' };
      const m: Rows | undefined = mask && maskBuffer
        ? { buffer: maskBuffer, offset: mask.offset, rowShape: compact.shape, rowStrides: compact.strides[2]!, step: mask.strides[mask.strides.length - 1]!, format: 'dtype' }
        : undefined;
      reduceRows(rec, x, n, o, initial === undefined ? undefined : bitsOf(initial, dtype), m);
      rec.finish();
      noteKernelWrite(result.buffer);
    };
  });
}

/**
 * `accumulate` along `axis` by a tree scan, or undefined where it does not apply. A host array is
 * copied to the device first and the result copied back.
 *
 * @param out where the result goes (x's shape and dtype, on the device), else a new C-ordered array
 * @returns `out`, a new DeviceArray for a device `x`, or a host `{ data, shape }` for a host `x`
 */
export function treeAccumulate(fold: FoldKernels, x: ArrayOperand | DeviceOperand, axis: number, out?: DeviceOperand): Promise<unknown> {
  // Device operands: recorded at once where it can be (no Promise layer of this function's).
  if (x.kind === 'device') return accumulateOnDevice(fold, x, axis, out);
  if (sizeOf(x.shape) === 0 || !treeKernel(fold, x.dtype)) return NOT_APPLICABLE;
  return accumulateHostArray(fold, x, axis, out);
}

/** {@link treeAccumulate} of a host array: copied to the device first, the result copied back (when it was not given an `out`). */
async function accumulateHostArray(fold: FoldKernels, x: ArrayOperand, axis: number, out?: DeviceOperand): Promise<unknown> {
  const copy = await toDevice({ data: x.data, shape: x.shape, strides: x.strides, offset: x.offset, dtype: x.dtype });
  try {
    const result = await accumulateOnDevice(fold, { kind: 'device', array: copy, dtype: copy.dtype, shape: copy.shape, strides: copy.strides, offset: copy.offset }, axis, out);
    if (!result || out) return result;
    const data = await result.toHost();
    result.destroy();
    return { data, shape: [...x.shape] };
  } finally {
    copy.destroy();
  }
}

function accumulateOnDevice(fold: FoldKernels, x: DeviceOperand, axis: number, out?: DeviceOperand): Promise<DeviceArray | undefined> {
  const dtype = x.dtype;
  const n = x.shape[axis]!;
  if (sizeOf(x.shape) === 0) return Promise.resolve(undefined);
  if (out && (out.dtype !== dtype || out.shape.length !== x.shape.length || out.shape.some((s, d) => s !== x.shape[d]))) return Promise.resolve(undefined);
  const typed = treeKernel(fold, dtype);
  if (!typed) return Promise.resolve(undefined);
  return recordFold(typed, dtype, { given: out?.array as unknown as DeviceArray | undefined, shape: x.shape }, (ctx) => {
    const buffer = bindable(ctx, x, dtype);
    const outBuffer = out ? bindable(ctx, out, dtype) : undefined;
    const others = [...x.shape.keys()].filter((d) => d !== axis);
    const outStrides = out ? out.strides : cOrderStrides(x.shape);
    const compact = compactRows(others.map((d) => x.shape[d]!), others.map((d) => x.strides[d]!), others.map((d) => outStrides[d]!));
    if (!buffer || (out && (!outBuffer || outBuffer === buffer)) || compact.shape.length > MAX_ROW_RANK || sizeOf(x.shape) > 2 ** 31) return undefined;
    (x.array as unknown as DeviceArray).assertUsable();
    if (out) (out.array as unknown as DeviceArray).assertUsable();
    return (p, result) => {
      const rec = new Recorder(ctx, p, dtype, `${fold.name}.accumulate`);
      const xRows: Rows = { buffer, offset: x.offset, rowShape: compact.shape, rowStrides: compact.strides[0]!, step: x.strides[axis]!, format: 'dtype' };
      const o: Rows = { buffer: result.buffer, offset: out ? out.offset : 0, rowShape: compact.shape, rowStrides: compact.strides[1]!, step: outStrides[axis]!, format: 'dtype' };
      scanRows(rec, xRows, n, o, outStrides[axis]!);
      rec.finish();
      noteKernelWrite(result.buffer);
    };
  });
}
