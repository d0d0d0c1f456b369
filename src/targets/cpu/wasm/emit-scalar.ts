/**
 * Typed IR → WebAssembly instructions, one element at a time. The meaning is that of the JS
 * backend (targets/cpu/js/emit-js.ts), operation by operation:
 * - float32 arithmetic is Wasm's f32 arithmetic, which for `+ − × ÷ sqrt` is exactly
 *   `Math.fround` of the double operation (IEEE 754 single precision, round to nearest even);
 * - int32/uint32 wrap as `| 0`, `>>> 0` and `Math.imul` do; `%` by zero gives 0 as `(a % 0) | 0`;
 * - conversions to integers are JS's ToInt32 (truncate, wrap modulo 2³², NaN and ±∞ → 0), which
 *   Wasm's saturating truncation is not: see `toInt32`;
 * - `Math.*` functions without a Wasm instruction call a port of V8's own algorithm
 *   (math-ports.ts: exp, sin, cos, …, checked bit for bit against V8) or else V8's own `Math.*`
 *   (imported), bit-identical by construction.
 * Indices are always checked (the engine is not chosen when `boundsCheck` is off): an index out
 * of bounds calls the imported `oob`, which throws the same `KernelRuntimeError` as JS.
 */
import { type DType, DTYPES, isFloat } from '../../../dtypes.js';
import type { Argument, Expr, HelperFunction, MathFunction, Stmt, Variable } from '../../../compiler/ir.js';
import { type IndexCheckSite, indexCheckSite } from '../../../compiler/source-excerpt.js';
import type { SourceLocation } from '../../../errors.js';
import { isArrayType } from '../../../compiler/ir.js';
import { Bytes, MiscOp, Op, SimdOp, ValType, VOID } from './encoder.js';
import { emitFastExpF32 } from './fast-exp.js';
import { type CoreAxisNames, type CounterBound, isBoundedIndex, isInt32Exact, isInt32Index, isInt32ModIndex } from './loop-counters.js';

/** The Wasm type that holds a value of a dtype (small integers and bool widen to i32). */
export function valType(t: DType): ValType {
  return t === 'float64' ? ValType.f64 : t === 'float32' ? ValType.f32 : ValType.i32;
}

/** log2 of a dtype's size in bytes. */
export function sizeShift(t: DType): number {
  return Math.log2(DTYPES[t].bytes);
}

/** Where an array's parts live: locals holding its byte base, strides (in elements) and sizes. */
/** The branch targets of the loop being emitted: `break` leaves the loop, `continue` its body. */
export interface LoopLabels {
  readonly breakDepth: number;
  readonly continueDepth: number;
}

/**
 * Emits a `loop` statement's control flow — `block { loop { [test] block { body } update; br } }` —
 * with a uniform (scalar) condition; the statements inside go through `stmts`, so the scalar and
 * the row-vector emitters share it. `labels` is the emitter's stack of enclosing loops.
 */
export function emitLoop(e: FunctionEmitter, s: Extract<Stmt, { kind: 'loop' }>, stmts: (list: readonly Stmt[]) => void, labels: LoopLabels[]): void {
  stmts(s.init);
  e.open('block');
  const breakDepth = e.depth() - 1;
  e.open('loop');
  const top = e.depth() - 1;
  if (s.testFirst && s.cond) {
    e.expr(s.cond);
    e.op(Op.i32_eqz);
    e.br(breakDepth, true);
  }
  e.open('block');
  labels.push({ breakDepth, continueDepth: e.depth() - 1 });
  stmts(s.body);
  labels.pop();
  e.close();
  stmts(s.update);
  if (!s.testFirst) {
    if (s.cond) e.expr(s.cond);
    else e.i32(1);
    e.br(top, true);
  } else {
    e.br(top);
  }
  e.close();
  e.close();
}

export interface WasmArray {
  readonly base: number;
  /** Per axis: a local holding the stride in elements, or 1 where known to be contiguous. */
  readonly strides: readonly (number | 'unit')[];
  /** Per axis: a local holding the size, or a constant size. */
  readonly dims: readonly ({ local: number } | { constant: number })[];
  readonly dtype: DType;
  /** log2 of the bytes per element where not the dtype's (16: lane-interleaved rows, emit-rows.ts). */
  readonly shift?: number;
}

/** Module-wide services a function emitter needs: imports and helpers by index. */
export interface ModuleContext {
  /** The index of the imported `Math.fn` taking `arity` doubles. */
  mathImport(fn: MathFunction, arity: number): number;
  /** Whether the function `mathImport` gives takes the scratch area's address after its arguments (a port that needs it). */
  mathTakesScratch(fn: MathFunction, arity: number): boolean;
  /** The imported `fmod(a, b)`: JS's `%` on doubles. */
  fmodImport(): number;
  /** The imported out-of-bounds reporter for `ndim` indices: (site, i…, dims…) → never returns. */
  oobImport(ndim: number): number;
  helperIndex(h: HelperFunction): number;
  /** Byte offset, within the scratch area, of a local array declared by `owner`. */
  localArrayOffset(v: Variable): number;
  /** Descriptions of index-check sites, shared by all functions of the module. */
  readonly sites: IndexCheckSite[];
  /** Per index axis (`site#axis`), whether a bounds check is emitted (for `explain` and tests). */
  readonly indexChecks: Map<string, boolean>;
  /** float64 loop counters kept in i32 (see loop-counters.ts). */
  readonly counters: ReadonlySet<Variable>;
  /** Counters running to an array's size: indices on that axis need no check (loop-counters.ts). */
  readonly bounds: ReadonlyMap<Variable, CounterBound>;
  /** Core axis names of the kernel's array parameters: same-named axes have equal sizes. */
  readonly coreNames: CoreAxisNames;
}

type Label = 'block' | 'loop' | 'if';

/** One Wasm function being emitted: locals, labels, and the instructions. */
export class FunctionEmitter {
  readonly code = new Bytes();
  readonly locals: ValType[] = [];
  readonly vars = new Map<Variable, number>();
  readonly arrays = new Map<Variable, WasmArray>();
  private readonly labels: Label[] = [];
  private readonly loops: LoopLabels[] = [];
  /**
   * Where an index out of bounds goes: undefined to report it (the imported `oob` throws), or the
   * label to leave (the row-vector loop, which then lets the scalar loop redo the rows and throw).
   */
  bailTo: number | undefined = undefined;
  /**
   * Called before a loop statement is emitted: may emit code of its own for the loop (the vector
   * part of a loop along the row: along-rows.ts) and return the loop that the scalar code then
   * runs (the rest), or the statement itself.
   */
  beforeLoop: ((s: Extract<Stmt, { kind: 'loop' }>) => Extract<Stmt, { kind: 'loop' }>) | undefined = undefined;
  /** Where `return` goes inside the kernel body: the result local and the label to leave. */
  returnTo: { result: number | undefined; labelDepth: number } | 'function' = 'function';

  constructor(
    private readonly ctx: ModuleContext,
    /** Number of parameters (their locals come first). */
    private readonly paramCount: number,
    /** The local holding the scratch area's address. */
    readonly scratch: number,
  ) {}

  local(t: ValType): number {
    this.locals.push(t);
    return this.paramCount + this.locals.length - 1;
  }

  op(o: Op): this {
    this.code.byte(o);
    return this;
  }

  get(l: number): this {
    this.code.byte(Op.local_get).u32(l);
    return this;
  }

  set(l: number): this {
    this.code.byte(Op.local_set).u32(l);
    return this;
  }

  tee(l: number): this {
    this.code.byte(Op.local_tee).u32(l);
    return this;
  }

  i32(n: number): this {
    this.code.byte(Op.i32_const).s32(n);
    return this;
  }

  misc(o: MiscOp): this {
    this.code.byte(0xfc).u32(o);
    return this;
  }

  /** A 128-bit SIMD instruction (prefix 0xfd); memory and lane immediates follow on `code`. */
  simd(o: SimdOp): this {
    if (o === SimdOp.v128_const) this.constantsToHoist?.push(this.code.length);
    this.code.byte(0xfd).u32(o);
    return this;
  }

  /** Where the `v128.const`s emitted inside {@link hoistConstants}' body start in `code`. */
  private constantsToHoist: number[] | undefined;

  /**
   * Where {@link hoistConstants} keeps a loop's constants: bytes of the scratch area from
   * `offset` (16-aligned); `bytes` grows to what the loops use (the module reserves it).
   */
  constantArea: { readonly offset: number; bytes: number } | undefined;

  /**
   * Emits `body` (a loop) with its `v128.const`s moved out of it: each distinct constant is stored
   * once before the loop into the scratch area ({@link constantArea}) and loaded from there
   * inside (one instruction). V8 materializes a v128 constant at each use, in 2 to 4
   * instructions (a 64-bit immediate moved into a vector register and broadcast, or all-ones
   * shifted into a mask), and neither moves it out of loops nor keeps a local holding one in a
   * register: it sees the constant through the local and rebuilds it at each use again (a port's
   * lanes in a loop use 20-60 of them per vector). Without a constant area, constants stay.
   */
  hoistConstants(body: () => void): void {
    if (this.constantsToHoist || !this.constantArea || this.scratch < 0) return body();
    const area = this.constantArea;
    const start = this.code.length;
    const at: number[] = (this.constantsToHoist = []);
    try {
      body();
    } finally {
      this.constantsToHoist = undefined;
    }
    if (!at.length) return;
    const region = this.code.view().slice(start);
    const CONST_BYTES = 2 + 16; // 0xfd, v128.const (one LEB128 byte), the 16 bytes of the value
    const hoisted = new Map<string, { local: number; value: Uint8Array }>();
    const rewritten = new Bytes();
    let from = 0;
    for (const p of at) {
      const offset = p - start;
      rewritten.bytes(region.subarray(from, offset));
      const value = region.subarray(offset + 2, offset + CONST_BYTES);
      const key = value.join(',');
      let h = hoisted.get(key);
      if (!h) hoisted.set(key, (h = { local: this.local(ValType.v128), value }));
      rewritten.byte(Op.local_get).u32(h.local);
      from = offset + CONST_BYTES;
    }
    rewritten.bytes(region.subarray(from));
    this.code.truncate(start);
    // Stored, then loaded back: a value V8 cannot see as a constant.
    [...hoisted.values()].forEach(({ value }, i) => {
      this.get(this.scratch);
      this.simd(SimdOp.v128_const);
      this.code.bytes(value);
      this.simd(SimdOp.v128_store).code.u32(4).u32(area.offset + 16 * i);
    });
    [...hoisted.values()].forEach(({ local }, i) => {
      this.get(this.scratch);
      this.simd(SimdOp.v128_load).code.u32(4).u32(area.offset + 16 * i);
      this.set(local);
    });
    area.bytes = Math.max(area.bytes, 16 * hoisted.size);
    this.code.bytes(rewritten.view());
  }

  /** `i8x16.shuffle` of the two vectors on the stack: result byte i is byte `bytes[i]` of a ++ b. */
  shuffle(bytes: readonly number[]): this {
    this.simd(SimdOp.i8x16_shuffle);
    for (const b of bytes) this.code.byte(b);
    return this;
  }

  constant(value: number | boolean, t: DType): this {
    const n = typeof value === 'boolean' ? (value ? 1 : 0) : value;
    if (t === 'float64') this.code.byte(Op.f64_const).f64(n);
    else if (t === 'float32') this.code.byte(Op.f32_const).f32(n);
    else this.i32(n | 0);
    return this;
  }

  /** Opens a block/loop/if; `result` is the block's value type or void. */
  open(kind: Label, result: number = VOID): this {
    this.code.byte(kind === 'block' ? Op.block : kind === 'loop' ? Op.loop : Op.if).byte(result);
    this.labels.push(kind);
    return this;
  }

  else(): this {
    this.code.byte(Op.else);
    return this;
  }

  close(): this {
    this.code.byte(Op.end);
    this.labels.pop();
    return this;
  }

  /** The current label depth: `br` to a label opened at depth d uses `depth() - 1 - d`. */
  depth(): number {
    return this.labels.length;
  }

  br(labelDepth: number, conditional = false): this {
    this.code.byte(conditional ? Op.br_if : Op.br).u32(this.labels.length - 1 - labelDepth);
    return this;
  }

  // ------------------------------------------------------------------ statements

  stmts(list: readonly Stmt[]): void {
    for (const s of list) this.stmt(s);
  }

  stmt(s: Stmt): void {
    switch (s.kind) {
      case 'let':
      case 'assign': {
        const v = s.variable;
        const value = s.kind === 'let' ? s.init : s.value;
        if (this.ctx.counters.has(v)) this.int32(value);
        else this.expr(value);
        this.set(this.varLocal(v));
        return;
      }
      case 'local-array': {
        const a = this.arrays.get(s.variable)!;
        this.get(a.base).i32(0).i32(s.length * DTYPES[a.dtype].bytes).misc(MiscOp.memory_fill).code.byte(0);
        return;
      }
      case 'store': {
        const a = this.arrays.get(s.array)!;
        const address = this.address(s.array, a, s.indices, s.loc);
        this.get(address);
        this.expr(s.value);
        this.store(a.dtype);
        return;
      }
      case 'if':
        this.expr(s.cond);
        this.open('if');
        this.stmts(s.then);
        if (s.otherwise.length) {
          this.else();
          this.stmts(s.otherwise);
        }
        this.close();
        return;
      case 'loop':
        this.loop(s);
        return;
      case 'break':
        this.br(this.loops[this.loops.length - 1]!.breakDepth);
        return;
      case 'continue':
        this.br(this.loops[this.loops.length - 1]!.continueDepth);
        return;
      case 'return': {
        const to = this.returnTo;
        if (to === 'function') {
          if (s.value) this.expr(s.value);
          this.op(Op.return);
          return;
        }
        if (to.result !== undefined && s.value) {
          this.expr(s.value);
          this.set(to.result);
        }
        this.br(to.labelDepth);
        return;
      }
      case 'call':
        this.expr(s.call);
        if (s.call.helper.returnType !== 'void') this.op(Op.drop);
        return;
    }
  }

  private loop(s: Extract<Stmt, { kind: 'loop' }>): void {
    emitLoop(this, this.beforeLoop?.(s) ?? s, (list) => this.stmts(list), this.loops);
  }

  varLocal(v: Variable): number {
    let l = this.vars.get(v);
    if (l === undefined) {
      l = this.local(this.ctx.counters.has(v) ? ValType.i32 : valType(v.type as DType));
      this.vars.set(v, l);
    }
    return l;
  }

  /** Loads a `t` from the address on the stack plus `offset` bytes. */
  load(t: DType, offset = 0): void {
    const shift = sizeShift(t);
    const op: Record<DType, Op> = {
      float64: Op.f64_load, float32: Op.f32_load, int32: Op.i32_load, uint32: Op.i32_load,
      int16: Op.i32_load16_s, uint16: Op.i32_load16_u, int8: Op.i32_load8_s, uint8: Op.i32_load8_u, uint8c: Op.i32_load8_u, bool: Op.i32_load8_u,
      int64: Op.unreachable, uint64: Op.unreachable,
    };
    this.code.byte(op[t]).u32(shift).u32(offset);
    if (t === 'bool') this.i32(0).op(Op.i32_ne);
  }

  /** Stores the `t` on the stack at the address below it plus `offset` bytes. */
  store(t: DType, offset = 0): void {
    const op: Record<DType, Op> = {
      float64: Op.f64_store, float32: Op.f32_store, int32: Op.i32_store, uint32: Op.i32_store,
      int16: Op.i32_store16, uint16: Op.i32_store16, int8: Op.i32_store8, uint8: Op.i32_store8, uint8c: Op.i32_store8, bool: Op.i32_store8,
      int64: Op.unreachable, uint64: Op.unreachable,
    };
    this.code.byte(op[t]).u32(sizeShift(t)).u32(offset);
  }

  /**
   * Checks the indices of `array[indices]` and returns a local holding the element's byte address.
   * Each index is evaluated once.
   */
  address(array: Variable, a: WasmArray, indices: readonly Expr[], loc: SourceLocation): number {
    const site = this.ctx.sites.length;
    this.ctx.sites.push(indexCheckSite(array.name, loc));
    // An access the module emits twice (in a vector loop and in the scalar loop) is one check.
    const checkKey = `\`${array.name}\` at ${loc.line}:${loc.column} of ${loc.source ?? ''}`;
    const ints: number[] = [];
    const raw: { local: number; type: DType }[] = [];
    let bad: number | undefined;
    for (let axis = 0; axis < indices.length; axis++) {
      const e = indices[axis]!;
      const dim = a.dims[axis]!;
      const pushDim = () => ('local' in dim ? this.get(dim.local) : this.i32(dim.constant));
      const idx = this.local(ValType.i32);
      if (e.type === 'float64' && isInt32ModIndex(e, this.ctx.counters)) {
        // a % b on integers, in i64; b = 0 is out of bounds (JS: NaN), reported as NaN.
        const right = (e as Extract<Expr, { kind: 'binary' }>).right;
        const left = (e as Extract<Expr, { kind: 'binary' }>).left;
        const b = this.local(ValType.i64);
        const f = this.local(ValType.f64);
        this.int64(left);
        this.int64(right);
        this.tee(b).get(b).op(Op.i64_eqz).op(Op.i64_extend_i32_u).op(Op.i64_or);
        this.op(Op.i64_rem_s).op(Op.i32_wrap_i64).tee(idx);
        pushDim();
        this.op(Op.i32_ge_u);
        this.get(b).op(Op.i64_eqz).op(Op.i32_or);
        this.constant(NaN, 'float64');
        this.get(idx).op(Op.f64_convert_i32_s);
        this.get(b).op(Op.i64_eqz).op(Op.select).set(f);
        raw.push({ local: f, type: 'float64' });
      } else if (e.type === 'float64' && isInt32Index(e, this.ctx.counters) && isBoundedIndex(e, array, axis, this.ctx.bounds, this.ctx.coreNames)) {
        this.int32(e);
        this.set(idx);
        raw.push({ local: idx, type: 'int32' });
        ints.push(idx);
        this.ctx.indexChecks.set(`${checkKey} axis ${axis}`, false);
        continue;
      } else if (e.type === 'float64' && isInt32Index(e, this.ctx.counters)) {
        this.int32(e);
        this.tee(idx);
        pushDim();
        this.op(Op.i32_ge_u);
        raw.push({ local: idx, type: 'int32' });
      } else if (isFloat(e.type)) {
        // JS: `(i >>> 0) !== i || i >= dim` — valid iff i is an integer in [0, dim) (−0 included).
        const f = this.local(ValType.f64);
        this.expr(e);
        if (e.type === 'float32') this.op(Op.f64_promote_f32);
        this.tee(f).constant(0, 'float64').op(Op.f64_ge);
        this.get(f);
        pushDim();
        this.op(Op.f64_convert_i32_s).op(Op.f64_lt).op(Op.i32_and);
        this.get(f).op(Op.f64_trunc).get(f).op(Op.f64_eq).op(Op.i32_and).op(Op.i32_eqz);
        this.get(f).misc(MiscOp.i32_trunc_sat_f64_u).set(idx);
        raw.push({ local: f, type: 'float64' });
      } else {
        this.expr(e);
        this.tee(idx);
        pushDim();
        this.op(Op.i32_ge_u);
        raw.push({ local: idx, type: e.type });
      }
      this.ctx.indexChecks.set(`${checkKey} axis ${axis}`, true);
      if (bad === undefined) bad = this.local(ValType.i32);
      else this.get(bad).op(Op.i32_or);
      this.set(bad);
      ints.push(idx);
    }
    if (bad !== undefined && this.bailTo !== undefined) {
      this.get(bad).br(this.bailTo, true);
    } else if (bad !== undefined) {
      this.get(bad).open('if');
      this.i32(site);
      for (const r of raw) {
        this.get(r.local);
        if (r.type === 'uint32') this.op(Op.f64_convert_i32_u);
        else if (r.type !== 'float64') this.op(Op.f64_convert_i32_s);
      }
      for (const dim of a.dims) {
        if ('local' in dim) this.get(dim.local);
        else this.i32(dim.constant);
      }
      this.code.byte(Op.call).u32(this.ctx.oobImport(indices.length));
      this.op(Op.unreachable);
      this.close();
    }
    // base + (Σ index·stride) << log2(size)
    const address = this.local(ValType.i32);
    this.get(a.base);
    ints.forEach((idx, axis) => {
      this.get(idx);
      const stride = a.strides[axis]!;
      if (stride !== 'unit') this.get(stride).op(Op.i32_mul);
      if (axis > 0) this.op(Op.i32_add);
    });
    if (ints.length > 0) {
      const shift = a.shift ?? sizeShift(a.dtype);
      if (shift) this.i32(shift).op(Op.i32_shl);
      this.op(Op.i32_add);
    }
    this.set(address);
    return address;
  }

  // ------------------------------------------------------------------ expressions

  /**
   * A float64 expression whose value is an int32 (a counter, a constant, a conversion from the
   * int32 family, or one of those plus or minus a constant in an index), computed in i32.
   */
  int64(e: Expr): void {
    if (e.kind === 'binary') {
      this.int64(e.left);
      this.int64(e.right);
      this.op(e.op === '+' ? Op.i64_add : Op.i64_sub);
      return;
    }
    this.int32(e);
    this.op(Op.i64_extend_i32_s);
  }

  int32(e: Expr): void {
    switch (e.kind) {
      case 'const':
        this.i32(e.value as number);
        return;
      case 'cast':
        this.expr(e.value);
        return;
      case 'var':
        this.get(this.varLocal(e.variable));
        return;
      case 'binary':
        this.int32(e.left);
        this.int32(e.right);
        this.op(e.op === '+' ? Op.i32_add : Op.i32_sub);
        return;
      default:
        throw new Error(`unreachable int32 form ${e.kind}`);
    }
  }

  expr(e: Expr): void {
    switch (e.kind) {
      case 'const':
        this.constant(e.value as number | boolean, e.type);
        return;
      case 'var':
        this.get(this.varLocal(e.variable));
        if (this.ctx.counters.has(e.variable)) this.op(Op.f64_convert_i32_s);
        return;
      case 'unary':
        this.unary(e.op, e.arg, e.type);
        return;
      case 'binary':
        this.binary(e.op, e.left, e.right, e.type);
        return;
      case 'compare':
        if (e.operandType === 'float64' && isInt32Exact(e.left, this.ctx.counters) && isInt32Exact(e.right, this.ctx.counters)) {
          // Both sides are exact int32 values: the i32 comparison gives the same answer.
          this.int32(e.left);
          this.int32(e.right);
          this.op(compareOp(e.op, 'int32'));
          return;
        }
        this.expr(e.left);
        this.expr(e.right);
        this.op(compareOp(e.op, e.operandType));
        return;
      case 'logical':
        this.expr(e.left);
        this.open('if', ValType.i32);
        if (e.op === '&&') {
          this.expr(e.right);
          this.else().i32(0);
        } else {
          this.i32(1);
          this.else();
          this.expr(e.right);
        }
        this.close();
        return;
      case 'select':
        this.expr(e.cond);
        this.open('if', valType(e.type));
        this.expr(e.then);
        this.else();
        this.expr(e.otherwise);
        this.close();
        return;
      case 'cast':
        if (e.type === 'int32' && e.value.type === 'float64' && isInt32Exact(e.value, this.ctx.counters)) {
          // An int32 value as a double (a counter, say): its conversion back is the value itself.
          this.int32(e.value);
          return;
        }
        this.expr(e.value);
        this.cast(e.value.type, e.type);
        return;
      case 'math':
        this.math(e.fn, e.args, e.type, e.fastmath === true);
        return;
      case 'call':
        e.args.forEach((a) => this.argument(a));
        this.get(this.scratch);
        this.code.byte(Op.call).u32(this.ctx.helperIndex(e.helper));
        return;
      case 'index': {
        const a = this.arrays.get(e.array)!;
        const address = this.address(e.array, a, e.indices, e.loc);
        this.get(address);
        this.load(a.dtype);
        return;
      }
      case 'dim': {
        const dim = this.arrays.get(e.array)!.dims[e.axis]!;
        if ('local' in dim) this.get(dim.local);
        else this.i32(dim.constant);
        return;
      }
    }
  }

  /** Arrays are passed to helpers as their parts: byte base, strides, sizes (as JS does). */
  private argument(a: Argument): void {
    if (a.kind !== 'array-ref') {
      this.expr(a);
      return;
    }
    const arr = this.arrays.get(a.array)!;
    this.get(arr.base);
    for (const s of arr.strides) {
      if (s === 'unit') this.i32(1);
      else this.get(s);
    }
    for (const d of arr.dims) {
      if ('local' in d) this.get(d.local);
      else this.i32(d.constant);
    }
  }

  private unary(op: '-' | '!' | '~', arg: Expr, type: DType): void {
    if (op === '!') {
      this.expr(arg);
      this.op(Op.i32_eqz);
    } else if (op === '~') {
      this.expr(arg);
      this.i32(-1).op(Op.i32_xor);
    } else if (type === 'float64') {
      this.expr(arg);
      this.op(Op.f64_neg);
    } else if (type === 'float32') {
      this.expr(arg);
      this.op(Op.f32_neg);
    } else {
      this.i32(0);
      this.expr(arg);
      this.op(Op.i32_sub);
    }
  }

  private binary(op: string, left: Expr, right: Expr, type: DType): void {
    if (isFloat(type)) {
      if (op === '%') {
        // No Wasm instruction: JS's own `%` (fmod), in doubles, then rounded as JS would.
        this.expr(left);
        if (type === 'float32') this.op(Op.f64_promote_f32);
        this.expr(right);
        if (type === 'float32') this.op(Op.f64_promote_f32);
        this.code.byte(Op.call).u32(this.ctx.fmodImport());
        if (type === 'float32') this.op(Op.f32_demote_f64);
        return;
      }
      this.expr(left);
      this.expr(right);
      const f64: Record<string, Op> = { '+': Op.f64_add, '-': Op.f64_sub, '*': Op.f64_mul, '/': Op.f64_div };
      const f32: Record<string, Op> = { '+': Op.f32_add, '-': Op.f32_sub, '*': Op.f32_mul, '/': Op.f32_div };
      const o = (type === 'float64' ? f64 : f32)[op];
      if (o === undefined) throw new Error(`unreachable float operator ${op}`);
      this.op(o);
      return;
    }
    const unsigned = type === 'uint32';
    this.expr(left);
    if (op === '%') {
      // `(a % 0) | 0` is 0 in JS and traps in Wasm: divide by 1 instead, whose remainder is 0.
      const b = this.local(ValType.i32);
      this.expr(right);
      this.tee(b).get(b).op(Op.i32_eqz).op(Op.i32_or);
      this.op(unsigned ? Op.i32_rem_u : Op.i32_rem_s);
      return;
    }
    this.expr(right);
    const ops: Record<string, Op> = {
      '+': Op.i32_add, '-': Op.i32_sub, '*': Op.i32_mul, '&': Op.i32_and, '|': Op.i32_or, '^': Op.i32_xor,
      '<<': Op.i32_shl, '>>': Op.i32_shr_s, '>>>': Op.i32_shr_u,
    };
    const o = ops[op];
    if (o === undefined) throw new Error(`unreachable integer operator ${op}`);
    this.op(o);
  }

  /** Converts the value on the stack, with the semantics of a typed-array store (ir.ts `cast`). */
  cast(from: DType, to: DType): void {
    if (from === to) return;
    if (to === 'bool') {
      if (from === 'float64') this.op(Op.f64_abs).constant(0, 'float64').op(Op.f64_gt);
      else if (from === 'float32') this.op(Op.f32_abs).constant(0, 'float32').op(Op.f32_gt);
      else this.i32(0).op(Op.i32_ne);
      return;
    }
    if (to === 'float64') {
      if (from === 'float32') this.op(Op.f64_promote_f32);
      else this.op(from === 'uint32' ? Op.f64_convert_i32_u : Op.f64_convert_i32_s);
      return;
    }
    if (to === 'float32') {
      if (from === 'float64') this.op(Op.f32_demote_f64);
      else this.op(from === 'uint32' ? Op.f32_convert_i32_u : Op.f32_convert_i32_s);
      return;
    }
    if (to === 'uint8c') {
      if (from === 'uint8') return;
      // Uint8ClampedArray's store: round half to even (f64.nearest), then clamp to 0…255 (f64.max
      // keeps NaN, which the saturating truncation maps to 0). Integers go through f64, exactly.
      if (from === 'float32') this.op(Op.f64_promote_f32);
      else if (!isFloat(from)) this.op(from === 'uint32' ? Op.f64_convert_i32_u : Op.f64_convert_i32_s);
      this.op(Op.f64_nearest).constant(0, 'float64').op(Op.f64_max).constant(255, 'float64').op(Op.f64_min);
      this.misc(MiscOp.i32_trunc_sat_f64_u);
      return;
    }
    if (isFloat(from)) {
      if (from === 'float32') this.op(Op.f64_promote_f32);
      this.toInt32();
    }
    switch (to) {
      case 'int16': this.op(Op.i32_extend16_s); break;
      case 'int8': this.op(Op.i32_extend8_s); break;
      case 'uint16': this.i32(0xffff).op(Op.i32_and); break;
      case 'uint8': this.i32(0xff).op(Op.i32_and); break;
      case 'int32': case 'uint32': break; // the same 32 bits
      case 'int64': case 'uint64': throw new Error('unreachable: the Wasm engine refuses 64-bit integer kernels');
      default: {
        const never: never = to;
        throw new Error(`unreachable cast to ${String(never)}`);
      }
    }
  }

  /**
   * JS's ToInt32 of the double on the stack: r = x − trunc(x / 2³²)·2³² is exact for every finite
   * x and has |r| < 2³², so truncating r through i64 and keeping 32 bits wraps as JS does; NaN and
   * ±∞ give NaN, which saturating truncation maps to 0.
   */
  private toInt32(): void {
    const x = this.local(ValType.f64);
    this.tee(x).get(x).constant(2 ** -32, 'float64').op(Op.f64_mul).op(Op.f64_trunc).constant(2 ** 32, 'float64').op(Op.f64_mul).op(Op.f64_sub);
    this.misc(MiscOp.i64_trunc_sat_f64_s).op(Op.i32_wrap_i64);
  }

  /** `fastmath`: the fastmath pass marked the call (float32 exp computed in float32, fast-exp.ts). */
  private math(fn: MathFunction, args: readonly Expr[], type: DType, fastmath: boolean): void {
    const f64 = type === 'float64';
    const f32 = type === 'float32';
    const one = (a: Op, b: Op) => {
      this.expr(args[0]!);
      this.op(f64 ? a : b);
    };
    if (f64 || f32) {
      switch (fn) {
        case 'abs': return one(Op.f64_abs, Op.f32_abs);
        case 'floor': return one(Op.f64_floor, Op.f32_floor);
        case 'ceil': return one(Op.f64_ceil, Op.f32_ceil);
        case 'trunc': return one(Op.f64_trunc, Op.f32_trunc);
        case 'sqrt': return one(Op.f64_sqrt, Op.f32_sqrt);
        case 'fround':
          this.expr(args[0]!);
          if (args[0]!.type === 'float64') this.op(Op.f32_demote_f64);
          return;
        case 'min':
        case 'max': {
          this.expr(args[0]!);
          for (const a of args.slice(1)) {
            this.expr(a);
            this.op(fn === 'min' ? (f64 ? Op.f64_min : Op.f32_min) : f64 ? Op.f64_max : Op.f32_max);
          }
          return;
        }
        case 'round': {
          // V8's Math.round: r = ceil(x); r − 0.5 > x ? r − 1 : r (keeps −0, exact for |x| ≥ 2⁵²).
          const x = this.local(valType(type));
          const r = this.local(valType(type));
          this.expr(args[0]!);
          this.tee(x).op(f64 ? Op.f64_ceil : Op.f32_ceil).tee(r);
          this.constant(1, type).op(f64 ? Op.f64_sub : Op.f32_sub);
          this.get(r);
          this.get(r).constant(0.5, type).op(f64 ? Op.f64_sub : Op.f32_sub).get(x).op(f64 ? Op.f64_gt : Op.f32_gt);
          this.op(Op.select);
          return;
        }
        case 'sign': {
          // x < 0 ? −1 : x > 0 ? 1 : x (NaN and ±0 are returned as they are).
          const x = this.local(valType(type));
          const lt = f64 ? Op.f64_lt : Op.f32_lt;
          const gt = f64 ? Op.f64_gt : Op.f32_gt;
          this.expr(args[0]!);
          this.set(x);
          this.constant(-1, type).constant(1, type).get(x).constant(0, type).op(lt).op(Op.select);
          this.get(x);
          this.get(x).constant(0, type).op(lt).get(x).constant(0, type).op(gt).op(Op.i32_or);
          this.op(Op.select);
          return;
        }
        default: {
          if (fastmath) {
            this.expr(args[0]!);
            emitFastExpF32(this, 1);
            return;
          }
          // A port of V8's algorithm (exp, sin, …) or V8's own Math.* (imported), in doubles, rounded as JS does.
          for (const a of args) {
            this.expr(a);
            if (f32) this.op(Op.f64_promote_f32);
          }
          if (this.ctx.mathTakesScratch(fn, args.length)) this.get(this.scratch);
          this.code.byte(Op.call).u32(this.ctx.mathImport(fn, args.length));
          if (f32) this.op(Op.f32_demote_f64);
          return;
        }
      }
    }
    // Integer results: abs/sign/min/max (int32 or uint32), imul, clz32.
    const unsigned = type === 'uint32';
    switch (fn) {
      case 'imul':
        this.expr(args[0]!);
        this.expr(args[1]!);
        this.op(Op.i32_mul);
        return;
      case 'clz32':
        this.expr(args[0]!);
        this.op(Op.i32_clz);
        return;
      case 'abs': {
        if (unsigned) return this.expr(args[0]!);
        // (Math.abs(x) | 0): −2³¹ stays −2³¹.
        const x = this.local(ValType.i32);
        this.i32(0);
        this.expr(args[0]!);
        this.tee(x).op(Op.i32_sub).get(x).get(x).i32(0).op(Op.i32_lt_s).op(Op.select);
        return;
      }
      case 'sign': {
        const x = this.local(ValType.i32);
        this.expr(args[0]!);
        this.tee(x).i32(0).op(unsigned ? Op.i32_gt_u : Op.i32_gt_s);
        this.get(x).i32(0).op(unsigned ? Op.i32_lt_u : Op.i32_lt_s);
        this.op(Op.i32_sub);
        return;
      }
      case 'min':
      case 'max': {
        const acc = this.local(ValType.i32);
        const y = this.local(ValType.i32);
        this.expr(args[0]!);
        this.set(acc);
        for (const a of args.slice(1)) {
          this.expr(a);
          this.set(y);
          this.get(acc).get(y).get(acc).get(y);
          this.op(fn === 'min' ? (unsigned ? Op.i32_lt_u : Op.i32_lt_s) : unsigned ? Op.i32_gt_u : Op.i32_gt_s);
          this.op(Op.select).set(acc);
        }
        this.get(acc);
        return;
      }
      default:
        throw new Error(`unreachable integer Math.${fn}`);
    }
  }
}

function compareOp(op: string, t: DType): Op {
  if (t === 'float64') return ({ '<': Op.f64_lt, '<=': Op.f64_le, '>': Op.f64_gt, '>=': Op.f64_ge, '==': Op.f64_eq, '!=': Op.f64_ne } as Record<string, Op>)[op]!;
  if (t === 'float32') return ({ '<': Op.f32_lt, '<=': Op.f32_le, '>': Op.f32_gt, '>=': Op.f32_ge, '==': Op.f32_eq, '!=': Op.f32_ne } as Record<string, Op>)[op]!;
  if (t === 'uint32') return ({ '<': Op.i32_lt_u, '<=': Op.i32_le_u, '>': Op.i32_gt_u, '>=': Op.i32_ge_u, '==': Op.i32_eq, '!=': Op.i32_ne } as Record<string, Op>)[op]!;
  return ({ '<': Op.i32_lt_s, '<=': Op.i32_le_s, '>': Op.i32_gt_s, '>=': Op.i32_ge_s, '==': Op.i32_eq, '!=': Op.i32_ne } as Record<string, Op>)[op]!;
}

export { isArrayType };
