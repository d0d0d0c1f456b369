/**
 * One Wasm module per (typed kernel, memory layout): the kernel's helpers as functions, and `run`,
 * the loop over a contiguous run of the innermost loop dimension with the kernel body inlined.
 * The JS side (engine.ts) walks the outer loop dimensions and calls `run` once per row.
 *
 * `run`'s parameters, in order:
 * - per operand: a scalar's value, or the byte address of its element for the run's first loop
 *   index, followed for a strided operand by its step in bytes;
 * - per array parameter and core axis: the size, and the stride in elements where not 1;
 * - the number of elements, and the address of the scratch area that holds local arrays.
 */
import { type DType, DTYPES } from '../../../dtypes.js';
import type { HelperFunction, MathFunction, Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';
import { isArrayType } from '../../../compiler/ir.js';
import type { IndexCheckSite } from '../../../compiler/source-excerpt.js';
import type { MemoryLayout } from '../memory-layout.js';
import { type FuncType, ModuleBuilder, Op, SimdOp, ValType, VOID } from './encoder.js';
import { type CoreAxisNames, counterBounds, findLoopCounters } from './loop-counters.js';
import type { CallPlan } from '../../../plan.js';
import { callsOutOfLine, SimdEmitter, type SimdShape } from './emit-simd.js';
import { type ByteTable, byteTable, emitByteTable } from './byte-table.js';
import { IntLanesEmitter } from './emit-int-lanes.js';
import { LoopSimdEmitter, vectorizeShape } from './element-loops.js';
import { emitRowVectorLoop, ROW_SCRATCH_BYTES, type RowPlan, rowPlan, RowSimdEmitter } from './emit-rows.js';
import { IntRowSimdEmitter } from './emit-row-int-lanes.js';
import { describeIntLanes } from './row-int-lanes.js';
import { describeNarrowedLocals } from './exact-doubles.js';
import { isPortFunction, MATH_PORTS, PORT_FUNCTIONS, scalarEntry } from './math-ports.js';
import { WASM_MATH } from './math-support.js';
import { FunctionEmitter, type ModuleContext, sizeShift, valType, type WasmArray } from './emit-scalar.js';
import { type AlongLoop, alongRowLoops, describeAlongRows, emitAlongRowLoop, wantsAlongRows } from './along-rows.js';
import { loadLanes, storeLanes } from './lane-memory.js';
import { callExponent, type CallExponent, emitPerExponentCase } from './call-exponent.js';

export interface CompiledModule {
  readonly bytes: Uint8Array;
  /** Names of the imported functions, in import order: `log/1`, `fmod`, `oob/2`. */
  readonly imports: readonly string[];
  readonly sites: readonly IndexCheckSite[];
  /**
   * Every index axis of the kernel's array accesses (`a` at line:column, axis k), and whether its
   * bounds check is emitted; the others are in bounds by their loop (loop-counters.ts).
   */
  readonly indexChecks: ReadonlyMap<string, boolean>;
  /** Bytes of scratch memory `run` needs for local arrays (0 if none). */
  readonly scratchBytes: number;
  /** Lanes of the vectorised loop, or why the loop is scalar. */
  readonly lanes: 16 | 8 | 4 | 2 | string;
  /** Vectors per step of an element-wise vector loop (emit-simd.ts `SimdShape`); 1 for rows. */
  readonly vectors: number;
  /** Whether calls of enough elements look the results up in a table of 256 (byte-table.ts). */
  readonly byteTable: boolean;
  /** The float64 locals a per-row kernel's lanes hold as int32 or float32 (exact-doubles.ts), in words; empty for none. */
  readonly exactLocals: string;
  /** Per-row kernels: 4 rows per vector with float64 values in pairs of vectors (row-pairs.ts). */
  readonly pairedDoubles: boolean;
  /** Where a per-row kernel's rows run in 8- or 16-bit lanes (row-int-lanes.ts), how, in words; empty otherwise. */
  readonly intLanes: string;
  /** Where a per-row kernel's rows run one after another with loops in SIMD along the row (along-rows.ts), which, in words; empty otherwise. */
  readonly alongRows: string;
  /** Where pow's exponent is a value of the call (call-exponent.ts), where, in words; empty otherwise. */
  readonly exponentOfCall: string;
}

/** Collects the local arrays declared in a body (at any depth). */
function localArrays(body: readonly Stmt[], out: Extract<Stmt, { kind: 'local-array' }>[] = []): typeof out {
  for (const s of body) {
    if (s.kind === 'local-array') out.push(s);
    else if (s.kind === 'if') {
      localArrays(s.then, out);
      localArrays(s.otherwise, out);
    } else if (s.kind === 'loop') {
      localArrays(s.init, out);
      localArrays(s.body, out);
    }
  }
  return out;
}

/** Collects the imports a kernel needs by walking it once with a recording context. */
export function compileKernelModule(
  kernel: TypedKernel, kind: 'vectorize' | 'guvectorize', nin: number, layout: MemoryLayout, coreNames?: CallPlan['coreNames'],
  /** The memory the module imports: the one shared memory (memory.ts), or a private, non-shared one of the calling thread (block-staging.ts). */
  memory: 'shared' | 'private' = 'shared',
): CompiledModule {
  const names = new Map<Variable, readonly (string | undefined)[]>();
  kernel.params.forEach((p, i) => {
    const operandNames = coreNames?.[i];
    if (isArrayType(p.type) && operandNames) names.set(p, operandNames);
  });
  // Imports must be numbered before defined functions, so the bodies are emitted against a
  // context that records the imports (and fdlibm ports) they use; the module is then assembled
  // with those in the order recorded, and the bodies are emitted a second time with final indices.
  const recorded: string[] = [];
  const record = (name: string): number => {
    if (recorded.includes(name)) return 0;
    recorded.push(name);
    // What a port's functions call is recorded with them (their bodies are emitted only once the
    // indices are known).
    if (isPortFunction(name)) PORT_FUNCTIONS[name]!.calls.forEach(record);
    return 0;
  };
  emit(kernel, kind, nin, layout, names, record, recorded, memory);
  const imports = recorded.filter((n) => !isPortFunction(n));
  const ported = recorded.filter(isPortFunction);
  const index = (name: string) => (isPortFunction(name) ? imports.length + ported.indexOf(name) : imports.indexOf(name));
  return emit(kernel, kind, nin, layout, names, index, recorded, memory);
}

function importType(name: string): FuncType {
  if (name === 'fmod') return { params: [ValType.f64, ValType.f64], results: [ValType.f64] };
  const [base, n] = name.split('/') as [string, string];
  const arity = Number(n);
  if (base === 'oob') {
    return { params: [ValType.i32, ...Array<ValType>(arity).fill(ValType.f64), ...Array<ValType>(arity).fill(ValType.i32)], results: [] };
  }
  return { params: Array<ValType>(arity).fill(ValType.f64), results: [ValType.f64] };
}

function emit(
  kernel: TypedKernel,
  kind: 'vectorize' | 'guvectorize',
  nin: number,
  layout: MemoryLayout,
  coreNames: CoreAxisNames,
  importIndex: (name: string) => number,
  importNames: string[],
  memory: 'shared' | 'private',
): CompiledModule {
  const builder = new ModuleBuilder({ min: 1, max: 65536, shared: memory === 'shared' });
  // In the first pass the import count is not known yet: indices are only recorded there.
  const imports = importNames.filter((n) => !isPortFunction(n));
  for (const name of imports) builder.importFunction('env', name, importType(name));
  // Ports' functions come first among defined functions (their indices follow the imports').
  const ported = importNames.filter(isPortFunction).map((name) => ({ name, port: PORT_FUNCTIONS[name]!, index: builder.declare(PORT_FUNCTIONS[name]!) }));
  const sites: IndexCheckSite[] = [];
  const indexChecks = new Map<string, boolean>();

  // Scratch offsets for every local array of the kernel and its helpers (no recursion, so each
  // declaration has one fixed place).
  const scratch = new Map<Variable, number>();
  let scratchBytes = 0;
  for (const s of [...localArrays(kernel.body), ...kernel.helpers.flatMap((h) => localArrays(h.body))]) {
    scratch.set(s.variable, scratchBytes);
    scratchBytes += Math.ceil((s.length * DTYPES[(s.variable.type as { dtype: DType }).dtype].bytes) / 16) * 16;
  }
  // Then the ports' area (one at a time uses it: the huge-argument reduction of sin, cos, tan).
  const portScratch = scratchBytes;
  scratchBytes += Math.ceil(Math.max(0, ...ported.map((p) => p.port.scratchBytes ?? 0)) / 16) * 16;

  const helperIndices = new Map<HelperFunction, number>();
  const helperTypes = kernel.helpers.map((h) => {
    const params: ValType[] = [];
    for (const p of h.params) {
      if (isArrayType(p.type)) params.push(ValType.i32, ...Array<ValType>(p.type.ndim * 2).fill(ValType.i32));
      else params.push(valType(p.type));
    }
    params.push(ValType.i32); // scratch
    return { params, results: h.returnType === 'void' ? [] : [valType(h.returnType)] } satisfies FuncType;
  });
  const counters = findLoopCounters(kernel);
  const ctx: ModuleContext = {
    mathImport: (fn: MathFunction, arity: number) => importIndex(WASM_MATH[fn].scalar === 'port' && MATH_PORTS[fn]?.arity === arity ? scalarEntry(fn) : `${fn}/${arity}`),
    mathTakesScratch: (fn: MathFunction, arity: number) => WASM_MATH[fn].scalar === 'port' && MATH_PORTS[fn]?.arity === arity && PORT_FUNCTIONS[scalarEntry(fn)]!.takesScratch === true,
    fmodImport: () => importIndex('fmod'),
    oobImport: (ndim: number) => importIndex(`oob/${ndim}`),
    helperIndex: (h) => helperIndices.get(h)!,
    localArrayOffset: (v) => scratch.get(v)!,
    sites,
    indexChecks,
    counters,
    bounds: counterBounds(kernel, counters),
    coreNames,
  };

  const runParams: ValType[] = [];
  layout.inner.forEach((step, i) => {
    if (step === 'scalar') runParams.push(valType(operandDtype(kernel, i)));
    else runParams.push(ValType.i32, ...(step === 'strided' ? [ValType.i32] : []));
  });
  kernel.params.forEach((p, i) => {
    if (!isArrayType(p.type)) return;
    for (let a = 0; a < p.type.ndim; a++) runParams.push(ValType.i32, ...(layout.coreUnit[i]![a] ? [] : [ValType.i32]));
  });
  runParams.push(ValType.i32, ValType.i32);

  // Helpers first (callees before callers), then run.
  for (let i = 0; i < kernel.helpers.length; i++) helperIndices.set(kernel.helpers[i]!, builder.declare(helperTypes[i]!));
  const runIndex = builder.declare({ params: runParams, results: [] });

  for (const { port, index } of ported) {
    const e = new FunctionEmitter(ctx, port.params.length, port.takesScratch ? port.params.length - 1 : -1);
    port.emit(e, importIndex, portScratch);
    builder.define(index, { type: port, locals: e.locals, code: e.code });
  }

  kernel.helpers.forEach((h, i) => {
    const type = helperTypes[i]!;
    const e = new FunctionEmitter(ctx, type.params.length, type.params.length - 1);
    let p = 0;
    for (const v of h.params) {
      if (isArrayType(v.type)) {
        const base = p++;
        const strides = Array.from({ length: v.type.ndim }, () => p++);
        const dims = Array.from({ length: v.type.ndim }, () => ({ local: p++ }));
        e.arrays.set(v, { base, strides, dims, dtype: v.type.dtype });
      } else {
        e.vars.set(v, p++);
      }
    }
    declareLocalArrays(e, h.body, ctx);
    e.stmts(h.body);
    if (h.returnType !== 'void') e.constant(undefinedValue(h.returnType), h.returnType);
    e.op(Op.end);
    builder.define(helperIndices.get(h)!, { type, locals: e.locals, code: e.code });
  });

  // Per-row kernels: rows one after another with loops along the row in lanes, where the layout
  // asks and a loop qualifies (along-rows.ts); else the row plan, and the row scratch area after
  // the local arrays' (emit-rows.ts).
  const alongLoops = kind === 'guvectorize' && wantsAlongRows(layout) ? alongRowLoops(kernel, layout, counters) : undefined;
  const along = typeof alongLoops === 'object' ? alongLoops : undefined;
  const row = kind === 'guvectorize' && !along ? rowPlan(kernel, layout) : undefined;
  const shape = kind === 'vectorize' ? vectorizeShape(kernel, layout) : along ? 'rows run one after another' : typeof row === 'string' ? row : { lanes: row!.lanes, vectors: row!.groups };
  let rows: { plan: RowPlan; offset: number } | undefined;
  if (row !== undefined && typeof row !== 'string') {
    rows = { plan: row, offset: Math.ceil(scratchBytes / 16) * 16 };
    scratchBytes = rows.offset + ROW_SCRATCH_BYTES;
  }
  const table = byteTable(kernel, kind, nin, layout, shape, callsOutOfLine(kernel));
  let tables: { plan: ByteTable; offset: number; run: number } | undefined;
  if (table) {
    tables = { plan: table, offset: Math.ceil(scratchBytes / 16) * 16, run: runIndex };
    scratchBytes = tables.offset + table.scratchBytes;
  }
  // Then the vector loops' constants (FunctionEmitter.hoistConstants), as many as they use.
  const constants = { offset: Math.ceil(scratchBytes / 16) * 16, bytes: 0 };
  // pow's exponent of the call, in the kernel the vector loops emit (rows: their plan's)
  const exponent = rows ? callExponent(rows.plan.kernel, layout) : typeof shape !== 'string' || along ? callExponent(kernel, layout) : undefined;
  builder.define(runIndex, { ...emitRun(kernel, kind, nin, layout, ctx, runParams, shape, rows, tables, constants, along, exponent), exportName: 'run' });
  if (constants.bytes > 0) scratchBytes = constants.offset + constants.bytes;
  const lanes = typeof shape === 'string' ? shape : shape.lanes;
  const exactLocals = rows && rows.plan.kernel !== kernel ? describeNarrowedLocals(kernel, rows.plan.kernel) : '';
  const intLanes = rows?.plan.intLanes ? describeIntLanes(rows.plan.intLanes) : '';
  return { bytes: builder.encode(), imports, sites, indexChecks, scratchBytes, lanes, vectors: typeof shape === 'string' ? 1 : shape.vectors, byteTable: table !== undefined, exactLocals, pairedDoubles: rows?.plan.pairs === true, intLanes, alongRows: along ? describeAlongRows(along) : '',
    exponentOfCall: exponent ? `\`**\` at kernel line ${exponent.at} with an exponent the same for the whole call: its case (odd, even, not an integer, other) decided once per call, before loops of its own` : '' };
}

/** The element type of operand `i` (a vectorize kernel's output follows its parameters). */
function operandDtype(kernel: TypedKernel, i: number): DType {
  const p = kernel.params[i];
  if (!p) return kernel.returnType as DType;
  return isArrayType(p.type) ? p.type.dtype : p.type;
}

/** The default result of a kernel that ends without `return` (what JS stores for `undefined`). */
function undefinedValue(t: DType): number {
  return t === 'float32' || t === 'float64' ? NaN : 0;
}

/** Gives each local array a local holding its address (scratch + offset). */
function declareLocalArrays(e: FunctionEmitter, body: readonly Stmt[], ctx: ModuleContext): void {
  for (const s of localArrays(body)) {
    const base = e.local(ValType.i32);
    e.get(e.scratch).i32(ctx.localArrayOffset(s.variable)).op(Op.i32_add).set(base);
    e.arrays.set(s.variable, { base, strides: ['unit'], dims: [{ constant: s.length }], dtype: (s.variable.type as { dtype: DType }).dtype });
  }
}

/** The emitter of a per-row kernel's vector body: in narrow integer lanes where its plan says so. */
function rowEmitter(e: FunctionEmitter, ctx: ModuleContext, plan: RowPlan): RowSimdEmitter {
  return plan.intLanes ? new IntRowSimdEmitter(e, ctx, { ...plan, intLanes: plan.intLanes }) : new RowSimdEmitter(e, ctx, plan.lanes, plan);
}

function emitRun(
  kernel: TypedKernel, kind: 'vectorize' | 'guvectorize', nin: number, layout: MemoryLayout, ctx: ModuleContext, params: ValType[], shape: SimdShape | string,
  rows: { plan: RowPlan; offset: number } | undefined, tables: { plan: ByteTable; offset: number; run: number } | undefined,
  constants: { readonly offset: number; bytes: number },
  along: ReadonlyMap<Stmt, AlongLoop> | undefined,
  exponent: CallExponent | undefined,
) {
  const count = params.length - 2;
  const e = new FunctionEmitter(ctx, params.length, params.length - 1);
  e.constantArea = constants;
  // Parameter locals, by operand.
  const pointer: (number | undefined)[] = [];
  const step: (number | undefined)[] = [];
  let p = 0;
  layout.inner.forEach((_, i) => {
    if (layout.inner[i] === 'scalar') {
      pointer.push(undefined);
      step.push(p++);
    } else {
      pointer.push(p++);
      step.push(layout.inner[i] === 'strided' ? p++ : undefined);
    }
  });
  kernel.params.forEach((v, i) => {
    if (!isArrayType(v.type)) return;
    const dims: WasmArray['dims'][number][] = [];
    const strides: WasmArray['strides'][number][] = [];
    for (let a = 0; a < v.type.ndim; a++) {
      dims.push({ local: p++ });
      strides.push(layout.coreUnit[i]![a] ? 'unit' : p++);
    }
    e.arrays.set(v, { base: pointer[i]!, strides, dims, dtype: v.type.dtype });
  });
  declareLocalArrays(e, kernel.body, ctx);

  const vectorized = kind === 'vectorize';
  const returnType = kernel.returnType;
  const result = vectorized ? e.local(valType(returnType as DType)) : undefined;
  const k = e.local(ValType.i32);
  /** Whether elements (rows) are left to compute: before the loops, whether the call has any. */
  const elementsLeft = () => void e.get(k).get(count).op(Op.i32_lt_u);

  if (tables) {
    const at = e.local(ValType.i32);
    e.get(e.scratch).i32(tables.offset).op(Op.i32_add).set(at);
    const operandValue = (i: number) => e.get(layout.inner[i] === 'scalar' ? step[i]! : pointer[i]!);
    emitByteTable(e, tables.plan, nin, layout.inner.length, returnType as DType, tables.run, at, pointer, count, k, operandValue);
  }
  if (rows) {
    const rowScratch = e.local(ValType.i32);
    e.get(e.scratch).i32(rows.offset).op(Op.i32_add).set(rowScratch);
    const loadScalars = () => loadScalarParams(e, rows.plan.kernel, layout, pointer, step);
    e.hoistConstants(() => emitPerExponentCase(e, exponent, loadScalars, elementsLeft, () => {
      emitRowVectorLoop(e, ctx, layout, rows.plan, { pointer, step, k, count }, rowScratch, rowEmitter(e, ctx, rows.plan));
      // Then one block of rows per step: the tail the groups leave (fewer rows than a step), or all
      // rows where they do not fit a group's share of the scratch.
      const one = { ...rows.plan, groups: 1 };
      if (rows.plan.groups > 1) emitRowVectorLoop(e, ctx, layout, one, { pointer, step, k, count }, rowScratch, rowEmitter(e, ctx, one));
      // Rows in 8- or 16-bit lanes leave up to 15 rows: 4 at a time in 32-bit lanes first.
      const four = rows.plan.fourLanes && { ...rows.plan.fourLanes, groups: 1 };
      if (four) emitRowVectorLoop(e, ctx, layout, four, { pointer, step, k, count }, rowScratch, rowEmitter(e, ctx, four));
    }));
  } else if (typeof shape !== 'string') {
    const loadScalars = () => loadScalarParams(e, kernel, layout, pointer, step);
    e.hoistConstants(() => emitPerExponentCase(e, exponent, loadScalars, elementsLeft, () => emitVectorLoop(e, ctx, kernel, nin, layout, shape, pointer, step, k, count)));
  }

  // The scalar loop: every element where there is no vector loop, else the tail; rows one after
  // another where loops run along the row, each such loop's vector part before its scalar rest.
  if (along) {
    e.beforeLoop = (s) => {
      const loop = along.get(s);
      if (!loop) return s;
      emitAlongRowLoop(e, ctx, s, loop);
      return { ...s, init: [] };
    };
    const loadScalars = () => loadScalarParams(e, kernel, layout, pointer, step);
    e.hoistConstants(() => emitPerExponentCase(e, exponent, loadScalars, elementsLeft, () => emitScalarLoop(e, kernel, nin, layout, pointer, step, k, count, result)));
  } else emitScalarLoop(e, kernel, nin, layout, pointer, step, k, count, result);
  e.op(Op.end);
  void VOID;
  return { type: { params, results: [] }, locals: e.locals, code: e.code };
}

/** Sets the locals of the scalar parameters passed as one number or broadcast, as the scalar loop does for each element. */
function loadScalarParams(e: FunctionEmitter, kernel: TypedKernel, layout: MemoryLayout, pointer: readonly (number | undefined)[], step: readonly (number | undefined)[]): void {
  kernel.params.forEach((v, i) => {
    if (isArrayType(v.type)) return;
    if (layout.inner[i] === 'scalar') e.get(step[i]!).set(e.varLocal(v));
    else if (layout.inner[i] === 'broadcast') {
      e.get(pointer[i]!);
      e.load(v.type);
      e.set(e.varLocal(v));
    }
  });
}

/** `run`'s scalar loop over the elements (rows) from `k` to `count`, the kernel body inlined. */
function emitScalarLoop(
  e: FunctionEmitter, kernel: TypedKernel, nin: number, layout: MemoryLayout,
  pointer: (number | undefined)[], step: (number | undefined)[], k: number, count: number, result: number | undefined,
): void {
  const returnType = kernel.returnType;
  e.open('block');
  const exit = e.depth() - 1;
  e.open('loop');
  const top = e.depth() - 1;
  e.get(k).get(count).op(Op.i32_ge_u).br(exit, true);
  kernel.params.forEach((v, i) => {
    if (isArrayType(v.type)) return;
    const local = e.varLocal(v);
    if (layout.inner[i] === 'scalar') e.get(step[i]!).set(local);
    else {
      e.get(pointer[i]!);
      e.load(v.type);
      e.set(local);
    }
  });
  if (result !== undefined) e.constant(undefinedValue(returnType as DType), returnType as DType).set(result);
  e.open('block');
  e.returnTo = { result, labelDepth: e.depth() - 1 };
  e.stmts(kernel.body);
  e.close();
  if (result !== undefined) {
    e.get(pointer[nin]!).get(result);
    e.store(returnType as DType);
  }
  kernel.params.forEach((v, i) => {
    const s = layout.inner[i];
    if (s === 'scalar' || s === 'broadcast') return;
    const dtype = isArrayType(v.type) ? v.type.dtype : v.type;
    e.get(pointer[i]!);
    if (s === 'strided') e.get(step[i]!);
    else e.i32(1 << sizeShift(dtype));
    e.op(Op.i32_add).set(pointer[i]!);
  });
  if (result !== undefined) {
    // The output of a vectorize kernel is the operand after the inputs; kernel.params has no
    // variable for it, so it advances here.
    const s = layout.inner[nin];
    if (s !== 'broadcast') {
      e.get(pointer[nin]!);
      if (s === 'strided') e.get(step[nin]!);
      else e.i32(1 << sizeShift(returnType as DType));
      e.op(Op.i32_add).set(pointer[nin]!);
    }
  }
  e.get(k).i32(1).op(Op.i32_add).set(k);
  e.br(top);
  e.close();
  e.close();
}

/**
 * The vector loop: `lanes × vectors` elements per iteration while that many remain (see
 * emit-simd.ts); the body runs once per vector, on the operands' elements at that vector's place.
 */
function emitVectorLoop(
  e: FunctionEmitter, ctx: ModuleContext, kernel: TypedKernel, nin: number, layout: MemoryLayout, shape: SimdShape,
  pointer: (number | undefined)[], step: (number | undefined)[], k: number, count: number,
): void {
  const { lanes, vectors } = shape;
  const perStep = lanes * vectors;
  const result = e.local(ValType.v128);
  const simd = shape.intLanes ? new IntLanesEmitter(e, ctx, result, shape.intLanes)
    : shape.loops ? new LoopSimdEmitter(e, ctx, lanes as 4 | 2, result, shape.loops) : new SimdEmitter(e, ctx, lanes, result);
  const returnType = kernel.returnType as DType;
  e.open('block');
  const exit = e.depth() - 1;
  e.open('loop');
  const top = e.depth() - 1;
  e.get(k).i32(perStep).op(Op.i32_add).get(count).op(Op.i32_gt_u).br(exit, true);
  for (let part = 0; part < vectors; part++) {
    kernel.params.forEach((v, i) => {
      const dtype = v.type as DType;
      const s = layout.inner[i];
      // A uniform operand of a kernel with loops stays scalar (element-loops.ts).
      const uniform = shape.loops !== undefined && !shape.loops.varying.has(v);
      if (s === 'scalar') {
        e.get(step[i]!);
        if (uniform) e.set(e.varLocal(v));
        else simd.splat(dtype);
      } else if (s === 'broadcast') {
        e.get(pointer[i]!);
        e.load(dtype);
        if (uniform) e.set(e.varLocal(v));
        else simd.splat(dtype);
      } else {
        e.get(pointer[i]!);
        loadLanes(e, dtype, lanes, part * lanes * DTYPES[dtype].bytes);
      }
      if (!uniform) e.set(simd.varLocal(v));
    });
    simd.begin(undefinedValue(returnType), returnType);
    simd.body(kernel.body);
    e.get(pointer[nin]!).get(result);
    storeLanes(e, returnType, lanes, part * lanes * DTYPES[returnType].bytes);
  }
  for (let i = 0; i <= nin; i++) {
    const s = layout.inner[i];
    if (s !== 'unit' && s !== 'origin') continue;
    const dtype = i < nin ? (kernel.params[i]!.type as DType) : returnType;
    e.get(pointer[i]!).i32(perStep * DTYPES[dtype].bytes).op(Op.i32_add).set(pointer[i]!);
  }
  e.get(k).i32(perStep).op(Op.i32_add).set(k);
  e.br(top);
  e.close();
  e.close();
}

