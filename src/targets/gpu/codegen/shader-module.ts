/**
 * Assembles the WGSL module of one (kernel, layout): storage bindings, the params buffer, the
 * bounds-check record, the kernel and its helpers as functions, and `main`, which maps each
 * invocation to one loop iteration (an output element for vectorize, a core slice for guvectorize),
 * finds its operands through the loop strides, and calls the kernel.
 *
 * Indexing: workgroups are dispatched in a 2-D grid (x up to 65,535), and
 * `item = (group.y · groups.x + group.x) · W + lane` is the flat loop index; items past the loop
 * size do nothing. An operand's element offset is `offset + Σ loopStride[d] · index[d]` in u32
 * arithmetic: strides are i32 bit patterns, and wrapping makes negative strides come out right.
 */
import type { ArrayType, Expr, HelperFunction, KernelTable, Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';
import { isArrayType } from '../../../compiler/ir.js';
import type { IndexCheckSite } from '../../../compiler/source-excerpt.js';
import type { DType } from '../../../dtypes.js';
import { cOrderStrides, sizeOf } from '../../../layout.js';
import { emitTileCode } from './coalescing.js';
import { alwaysReturns, type ArrayAccess, type ArrayOrigin, type BoundsServices, FunctionEmitter, type ModuleServices, originKey, type Rep, repOfType } from './emit-wgsl.js';
import { findIntegralDoubles, type IntegralDoubles } from '../../../compiler/passes/integral-doubles.js';
import { analyseCoverage } from '../../../compiler/passes/output-coverage.js';
import { forEachExpr, forEachStmt } from '../../../compiler/ir-walk.js';
import { constantValue } from '../../../compiler/constant-folding.js';
import { unrollForLayout } from './unroll.js';
import { ENTRY_POINT, WgslNamer } from './namer.js';
import { bindingNumbers, paramSlots, type ShaderLayout } from './shader-layout.js';
import { type StorageAccessors, storageAccessors } from './storage-access.js';
import { SUPPORT_NAMES, SupportLibrary } from './wgsl-support.js';

export interface GeneratedShader {
  readonly code: string;
  /** Bounds-check sites by number, as KernelRuntimeError messages name them. */
  readonly sites: readonly IndexCheckSite[];
}

/** The byte size of the bounds-check record (see `OobRecord` in the generated code). */
export const OOB_RECORD_BYTES = 48;

/**
 * Generates the WGSL module for a kernel and a layout.
 *
 * @param kernel the typed kernel (already accepted by checkGpuKernel)
 * @param layout what the call compiles in (shader-layout.ts)
 * @returns the code and its bounds-check sites
 */
export function generateShader(typed: TypedKernel, layout: ShaderLayout): GeneratedShader {
  // A staging tile's rows have a length the shader compiles in: loops over them can be unrolled.
  const kernel = unrollForLayout(typed, (p, axis) => {
    const tile = layout.operands[typed.params.indexOf(p)]?.tile;
    return tile === undefined ? undefined : layout.tiles[tile]!.coreShape[axis];
  });
  const checked = new ShaderModuleBuilder(kernel, layout, layout.boundsCheck).build();
  // Every index proven in bounds: no flag to test, no loop to leave (the record stays bound, unused).
  if (layout.boundsCheck && checked.sites.length === 0) return new ShaderModuleBuilder(kernel, layout, false).build();
  return checked;
}

/**
 * A scalar kernel (a vectorize kernel, or a guvectorize kernel of layout `(),()->()`) as a WGSL
 * function, with its helpers and support code but no bindings and no entry point, for hand-written
 * shaders that call it (the tree reduction and scan of `reduce`/`accumulate`, tree-fold.ts). Bounds
 * checks are off: such a kernel indexes only its local arrays and its one-element operands, which
 * WGSL keeps in bounds. A guvectorize kernel's array parameters become pointers to one-element
 * function-scope arrays (`ptr<function, array<T, 1>>`) that the caller declares.
 *
 * @param kernel the typed kernel (scalar parameters and a scalar result, or one-element array parameters)
 * @param reserved names the caller's shader uses, kept out of the generated code's names
 * @returns the code and the kernel function's name
 */
export function generateKernelFunction(kernel: TypedKernel, reserved: readonly string[]): { code: string; name: string } {
  const layout: ShaderLayout = {
    kind: 'vectorize', loopRank: 1, coreRanks: kernel.params.map(() => 0), operands: kernel.params.map(() => ({ binding: undefined, step: 'broadcast', coreUnit: [], tile: undefined })),
    bindings: [], tiles: [], workgroupSize: 64, boundsCheck: false,
  };
  return new ShaderModuleBuilder(kernel, layout, false, reserved).buildFunction();
}

class ShaderModuleBuilder {
  private readonly namer = new WgslNamer();
  private readonly support = new SupportLibrary();
  private readonly doubles: IntegralDoubles;
  private readonly slots;
  private readonly storage: StorageAccessors[];
  private readonly tileNames: string[];
  /**
   * Per tile: the private array its invocation's row is computed in, for output tiles that start
   * from zeros and are read only from themselves (see {@link PRIVATE_ROW_MAX}); undefined otherwise.
   */
  private readonly rowNames: (string | undefined)[];
  /** Per tile: whether it is stored as 4-element vectors (its binding declared so). */
  private readonly wideTiles: boolean[];
  /** Per tracked tile: its written flags and its load function (flag, then tile or memory). */
  private readonly tracked: ({ written: string; load: string } | undefined)[];
  /**
   * Per tile whose elements may be read from memory (tracked tiles, and reads before any write):
   * where the workgroup's rows start (a private that main sets) and the load from memory.
   */
  private readonly memory: ({ block: string; load: string } | undefined)[];
  /** Reads served from memory rather than the tile (compiler/passes/output-coverage.ts). */
  private readonly memoryReads = new Set<Expr>();
  private readonly sites: IndexCheckSite[] = [];
  private checkerCode = '';
  private readonly checkers = new Map<string, string>();
  private readonly instances = new Map<string, string>();
  private readonly pendingInstances: { helper: HelperFunction; origins: (ArrayOrigin | undefined)[]; name: string }[] = [];
  private readonly names: Record<'params' | 'oob' | 'oobType' | 'failed' | 'report' | 'kernel', string>;
  /** The kernel's lookup tables, by variable: module-scope bindings every function reads. */
  private readonly tables = new Map<Variable, ArrayAccess>();
  /** Their declarations. */
  private tableCode = '';

  constructor(
    private readonly kernel: TypedKernel,
    private readonly layout: ShaderLayout,
    /** Whether indices are checked (false also when the layout checks but nothing needs it). */
    private readonly checks: boolean,
    reserved: readonly string[] = [],
  ) {
    // Fixed names first, so they keep their spelling and user names go around them.
    for (const n of SUPPORT_NAMES) this.namer.fresh(n);
    for (const n of reserved) this.namer.fresh(n);
    this.names = {
      params: this.namer.fresh('params'),
      oob: this.namer.fresh('oob'),
      oobType: this.namer.fresh('OobRecord'),
      failed: this.namer.fresh('failed'),
      report: this.namer.fresh('report_oob'),
      kernel: this.namer.fresh('kernel'),
    };
    this.doubles = findIntegralDoubles(kernel);
    this.slots = paramSlots(layout.loopRank, layout.coreRanks);
    const numbers = bindingNumbers(layout, kernel.tables?.length ?? 0);
    kernel.tables?.forEach((t, k) => this.declareTable(t, numbers.tables[k]!));
    this.storage = layout.bindings.map((b, i) => storageAccessors(b, this.bindingHint(i), numbers.chunks[i]!, this.namer));
    this.tileNames = layout.tiles.map((t) => this.namer.fresh(`${this.bindingHint(t.binding)}_tile`));
    this.tracked = layout.tiles.map((t) => {
      if (t.init !== 'track') return undefined;
      const hint = this.bindingHint(t.binding);
      return { written: this.namer.fresh(`${hint}_written`), load: this.namer.fresh(`${hint}_tile_load`) };
    });
    this.memory = layout.tiles.map((t, i) => {
      if (t.init === 'zero') {
        const params = layout.operands.map((o, j) => (o.tile === i && j < kernel.params.length ? j : -1)).filter((j) => j >= 0);
        const size = sizeOf(t.coreShape);
        const reads = analyseCoverage(kernel, params, size).memoryReads;
        reads.forEach((e) => this.memoryReads.add(e));
        if (reads.size === 0) return undefined;
      } else if (t.init !== 'track') {
        return undefined;
      }
      const hint = this.bindingHint(t.binding);
      return { block: this.namer.fresh(`${hint}_block`), load: this.namer.fresh(`${hint}_memory_load`) };
    });
    // Wide tiles (16-byte stores): their binding is declared as vectors, used by the copy-out alone.
    this.wideTiles = layout.tiles.map((t, i) => t.wide && !this.memory[i] && layout.bindings[t.binding]!.chunks === 1);
    this.wideTiles.forEach((wide, i) => {
      if (!wide) return;
      const t = layout.tiles[i]!;
      const name = this.storage[t.binding]!.names[0]!; // one chunk
      const type = repOfType(t.dtype);
      const internal = () => {
        throw new Error('internal: element access to a binding declared as vectors');
      };
      this.storage[t.binding] = {
        declarations: `@group(0) @binding(${numbers.chunks[t.binding]![0]}) var<storage, read_write> ${name}: array<vec4<${type}>>;\n`,
        functions: '',
        load: internal,
        store: internal,
        names: [name],
        storeWide: (q: string, v: string) => `${name}[${q}] = ${v};`,
      };
    });
    this.rowNames = layout.tiles.map((t, i) =>
      t.init === 'zero' && t.store && !this.memory[i] && sizeOf(t.coreShape) <= PRIVATE_ROW_MAX ? this.namer.fresh(`${this.bindingHint(t.binding)}_row`) : undefined,
    );
  }

  /** A readable name for a binding: the kernel parameter it serves (`result` for vectorize's output). */
  private bindingHint(binding: number): string {
    const operand = this.layout.operands.findIndex((o) => o.binding === binding);
    return this.kernel.params[operand]?.name ?? 'result';
  }

  private get services(): ModuleServices {
    const bounds: BoundsServices | undefined = this.checks
      ? {
          failed: this.names.failed,
          site: (site) => this.sites.push(site) - 1,
          checker: (kinds) => this.checker(kinds),
        }
      : undefined;
    return {
      namer: this.namer,
      support: this.support,
      doubles: this.doubles,
      bounds,
      memoryReads: this.memoryReads,
      helperInstance: (helper, arrays) => {
        const origins = arrays.map((a) => a?.origin);
        const key = `${helper.name}(${origins.map((o) => (o ? originKey(o) : '_')).join(',')})`;
        let name = this.instances.get(key);
        if (!name) {
          name = this.namer.fresh(helper.name);
          this.instances.set(key, name);
          this.pendingInstances.push({ helper, origins, name });
        }
        return name;
      },
    };
  }

  /** The kernel and its helpers as functions, and the support code they use (generateKernelFunction). */
  buildFunction(): { code: string; name: string } {
    // Tables are bindings, which a hand-written shader does not declare (tree-fold.ts takes no such kernel).
    if (this.kernel.tables?.length) throw new Error(`internal: the kernel \`${this.kernel.name}\` reads lookup tables, which a kernel function has no binding for`);
    const kernelReturn = this.kernel.returnType === 'void' ? 'void' : this.kernel.returnType;
    const origins = new Map<Variable, ArrayOrigin>();
    for (const p of this.kernel.params) if (isArrayType(p.type)) origins.set(p, { kind: 'local', dtype: (p.type as ArrayType).dtype, length: 1 });
    const kernel = this.emitFunction(this.names.kernel, this.kernel.params, origins, this.kernel.body, this.kernel.locals, kernelReturn);
    const helpers: string[] = [];
    for (let i = 0; i < this.pendingInstances.length; i++) {
      const { helper, origins, name } = this.pendingInstances[i]!;
      const map = new Map<Variable, ArrayOrigin>();
      helper.params.forEach((p, k) => origins[k] && map.set(p, origins[k]!));
      helpers.push(this.emitFunction(name, helper.params, map, helper.body, helper.locals, helper.returnType));
    }
    const sections = [this.support.emit(), ...helpers, kernel];
    return { code: sections.filter((s) => s.trim() !== '').map((s) => s.replace(/\n*$/, '\n')).join('\n'), name: this.names.kernel };
  }

  build(): GeneratedShader {
    const { layout } = this;
    const kernelOrigins = new Map<Variable, ArrayOrigin>();
    this.kernel.params.forEach((p, i) => {
      if (!isArrayType(p.type)) return;
      const op = layout.operands[i]!;
      kernelOrigins.set(p, op.tile !== undefined ? { kind: 'tile', tile: op.tile } : { kind: 'binding', binding: op.binding!, unitStrides: op.coreUnit });
    });
    const kernelReturn = this.kernel.returnType === 'void' ? 'void' : this.kernel.returnType;
    let functions = this.emitFunction(this.names.kernel, this.kernel.params, kernelOrigins, this.kernel.body, this.kernel.locals, kernelReturn);
    // Helpers are specialised on demand, and may call further helpers.
    const helpers: string[] = [];
    for (let i = 0; i < this.pendingInstances.length; i++) {
      const { helper, origins, name } = this.pendingInstances[i]!;
      const map = new Map<Variable, ArrayOrigin>();
      helper.params.forEach((p, k) => origins[k] && map.set(p, origins[k]!));
      helpers.push(this.emitFunction(name, helper.params, map, helper.body, helper.locals, helper.returnType));
    }
    functions = [...helpers, functions].join('\n');
    // Last: it reads the opaque zero only when some function used a float constant.
    const main = this.emitMain();

    const numbers = bindingNumbers(layout, this.kernel.tables?.length ?? 0);
    let head = `// Generated by ufunc for the gpu target: kernel \`${this.kernel.name}\`.\n`;
    head += `@group(0) @binding(${numbers.params}) var<storage, read> ${this.names.params}: array<u32>;\n`;
    if (layout.boundsCheck) {
      head +=
        `struct ${this.names.oobType} { count: atomic<u32>, site: u32, axes: u32, float_axes: u32, index: vec4u, dims: vec4u }\n` +
        `@group(0) @binding(${numbers.oob}) var<storage, read_write> ${this.names.oob}: ${this.names.oobType};\n`;
    }
    head += this.storage.map((s) => s.declarations).join('');
    head += this.tableCode;
    const tileCode = this.tileCode();
    head += tileCode.declarations;
    this.rowNames.forEach((row, i) => {
      const t = layout.tiles[i]!;
      // Zero-filled per invocation, as the tile is.
      if (row) head += `var<private> ${row}: array<${repOfType(t.dtype)}, ${sizeOf(t.coreShape)}>;\n`;
    });
    let trackedCode = '';
    this.memory.forEach((m, i) => {
      if (!m) return;
      const tile = layout.tiles[i]!;
      const size = sizeOf(tile.coreShape);
      const type = repOfType(tile.dtype);
      head += `var<private> ${m.block}: u32;\n`;
      // Tile element e is row e / pitch, column e % pitch of the workgroup's rows.
      trackedCode += `fn ${m.load}(e: u32) -> ${type} {\n  return ${this.storage[tile.binding]!.load(`${m.block} + (e / ${tile.pitch}u) * ${size}u + e % ${tile.pitch}u`)};\n}\n`;
      const t = this.tracked[i];
      // An element not written yet still holds what memory holds.
      if (t) trackedCode += `fn ${t.load}(e: u32) -> ${type} {\n  if (${t.written}[e] != 0u) { return ${this.tileNames[i]}[e]; }\n  return ${m.load}(e);\n}\n`;
    });
    if (this.checks) {
      head +=
        `var<private> ${this.names.failed}: bool;\n\n` +
        `fn ${this.names.report}(site: u32, axes: u32, float_axes: u32, index: vec4u, dims: vec4u) {\n` +
        `  ${this.names.failed} = true;\n` +
        `  if (atomicAdd(&${this.names.oob}.count, 1u) == 0u) {\n` +
        `    ${this.names.oob}.site = site;\n    ${this.names.oob}.axes = axes;\n    ${this.names.oob}.float_axes = float_axes;\n` +
        `    ${this.names.oob}.index = index;\n    ${this.names.oob}.dims = dims;\n  }\n}\n`;
    }
    const sections = [head, this.support.emit(), this.storage.map((s) => s.functions).join('') + trackedCode, this.checkerCode, functions, main];
    const code = sections.filter((s) => s.trim() !== '').map((s) => s.replace(/\n*$/, '\n')).join('\n');
    return { code, sites: this.sites };
  }

  /** A checker for indices of the given kinds: returns them as u32 when in bounds, else reports. */
  private checker(kinds: string): string {
    const known = this.checkers.get(kinds);
    if (known) return known;
    const name = this.namer.fresh(`at_${kinds}`);
    const n = kinds.length;
    const axes = [...kinds].map((k, a) => ({ a, float: k === 'f' }));
    const params = axes.map(({ a, float }) => `i${a}: ${float ? 'f32' : 'i32'}, n${a}: u32`).join(', ');
    const result = n === 1 ? 'u32' : `vec${n}u`;
    const ok = axes
      .map(({ a, float }) => (float ? `(i${a} >= 0.0 && i${a} < 4294967296.0 && trunc(i${a}) == i${a} && k${a} < n${a})` : `k${a} < n${a}`))
      .join(' && ');
    const ks = axes.map(({ a }) => `k${a}`);
    const pad = (xs: string[]) => [...xs, ...Array(4 - n).fill('0u')].join(', ');
    const floatMask = axes.reduce((m, { a, float }) => m | (float ? 1 << a : 0), 0);
    this.checkerCode +=
      `fn ${name}(site: u32, ${params}) -> ${result} {\n` +
      axes.map(({ a }) => `  let k${a} = u32(i${a});\n`).join('') +
      `  if (${ok}) { return ${n === 1 ? 'k0' : `${result}(${ks.join(', ')})`}; }\n` +
      `  ${this.names.report}(site, ${n}u, ${floatMask}u, vec4u(${pad(axes.map(({ a }) => `bitcast<u32>(i${a})`))}), vec4u(${pad(axes.map(({ a }) => `n${a}`))}));\n` +
      `  return ${n === 1 ? '0u' : `${result}(0u)`};\n}\n`;
    this.checkers.set(kinds, name);
    return name;
  }

  /**
   * One WGSL function: the kernel, or a helper specialised for where its arrays live.
   */
  private emitFunction(
    name: string,
    params: readonly Variable[],
    origins: ReadonlyMap<Variable, ArrayOrigin>,
    body: readonly Stmt[],
    locals: readonly Variable[],
    returnType: DType | 'void',
  ): string {
    const services = this.services;
    const arrays = new Map<Variable, ArrayAccess>(this.tables);
    const names = new Map<Variable, string>();
    const probe = new FunctionEmitter(services, arrays, names, { rep: undefined });
    const assigned = new Set<Variable>();
    forEachStmt(body, (s) => s.kind === 'assign' && assigned.add(s.variable));

    const signature: string[] = [];
    let top = '';
    for (const p of params) {
      const n = this.namer.fresh(p.name);
      if (!isArrayType(p.type)) {
        const rep = probe.repOfVariable(p);
        names.set(p, n);
        if (assigned.has(p)) {
          // WGSL parameters are immutable; JS parameters are not.
          const incoming = this.namer.fresh(`${p.name}_in`);
          signature.push(`${incoming}: ${rep}`);
          top += `  var ${n}: ${rep} = ${incoming};\n`;
        } else {
          signature.push(`${n}: ${rep}`);
        }
        continue;
      }
      const origin = origins.get(p)!;
      const { access, declared } = this.arrayParam(p, n, origin);
      arrays.set(p, access);
      signature.push(...declared);
    }
    for (const v of locals) names.set(v, this.namer.fresh(v.name));
    forEachStmt(body, (s) => {
      if (s.kind !== 'local-array') return;
      const dtype = (s.variable.type as ArrayType).dtype;
      const n = this.namer.fresh(s.variable.name);
      const type = `array<${repOfType(dtype)}, ${s.length}>`;
      if (constantlyIndexed(body, s.variable, s.length)) {
        arrays.set(s.variable, scalarArray(s.variable, n, dtype, s.length, this.namer));
        return;
      }
      arrays.set(s.variable, {
        origin: { kind: 'local', dtype, length: s.length },
        dtype,
        base: '0u',
        strides: ['1u'],
        dims: [`${s.length}u`],
        load: (e) => `${n}[${e}]`,
        store: (e, v) => `${n}[${e}] = ${v};`,
        args: [`&${n}`],
        declaration: `var ${n}: ${type} = ${type}();`,
      });
    });

    const rep: Rep | undefined = returnType === 'void' ? undefined : repOfType(returnType);
    const emitter = new FunctionEmitter(services, arrays, names, { rep });
    const code = emitter.body(body, '  ');
    // JS returns undefined when a function ends without `return` (NaN once stored as a number).
    const end = rep && !alwaysReturns(body) ? `  return ${emitter.undefinedValue(rep)};\n` : '';
    return `fn ${name}(${signature.join(', ')})${rep ? ` -> ${rep}` : ''} {\n${top}${code}${end}}\n`;
  }

  /**
   * Declares a lookup table as a read-only storage binding of one u32 word per element (its bits:
   * tables.ts `tableWords`), which runtime/table-buffers.ts uploads once per device and binds to
   * every call of the kernel. Not a WGSL `const`: drivers copy a constant array into each
   * invocation's private memory to index it at run time (70× slower at 4,096 elements on lavapipe).
   */
  private declareTable(table: KernelTable, binding: number): void {
    const dtype = (table.variable.type as ArrayType).dtype;
    const rep = repOfType(dtype);
    const name = this.namer.fresh(`${table.variable.name}_table`);
    this.tableCode += `@group(0) @binding(${binding}) var<storage, read> ${name}: array<u32>;\n`;
    const load = rep === 'u32' ? (e: string) => `${name}[${e}]` : (e: string) => `bitcast<${rep}>(${name}[${e}])`;
    this.tables.set(table.variable, {
      origin: { kind: 'table', name },
      dtype,
      base: '0u',
      strides: ['1u'],
      dims: [`${table.data.length}u`],
      load,
      store: () => {
        throw new Error(`internal: the lookup table \`${table.variable.name}\` is stored to (lowering refuses that)`);
      },
      args: [],
    });
  }

  /** How a function reaches an array parameter of the given origin, and its WGSL parameters. */
  private arrayParam(p: Variable, n: string, origin: ArrayOrigin): { access: ArrayAccess; declared: string[] } {
    const type = p.type as ArrayType;
    const axes = [...Array(type.ndim).keys()];
    switch (origin.kind) {
      case 'table': {
        const table = [...this.tables.values()].find((t) => t.origin.kind === 'table' && t.origin.name === origin.name)!;
        return { access: table, declared: [] };
      }
      case 'binding': {
        const base = this.namer.fresh(`${n}_base`);
        const strides = axes.map((a) => (origin.unitStrides[a] ? '1u' : this.namer.fresh(`${n}_stride${a}`)));
        const dims = axes.map((a) => this.namer.fresh(`${n}_len${a}`));
        const storage = this.storage[origin.binding]!;
        const passed = [base, ...strides.filter((s) => s !== '1u'), ...dims];
        return {
          access: { origin, dtype: type.dtype, base, strides, dims, load: storage.load, store: storage.store, args: passed },
          declared: passed.map((x) => `${x}: u32`),
        };
      }
      case 'tile': {
        const base = this.namer.fresh(`${n}_base`);
        const tile = this.layout.tiles[origin.tile]!;
        const strides = cOrderStrides(tile.coreShape).map((s) => `${s}u`);
        const name = this.tileNames[origin.tile]!;
        const tracked = this.tracked[origin.tile];
        const memory = this.memory[origin.tile];
        const row = this.rowNames[origin.tile];
        if (row) {
          // The invocation's own row, in a private array (main copies it into the tile). It starts
          // at element 0, so an index that is constant (an unrolled loop's, unroll.ts) stays a literal.
          return {
            access: { origin, dtype: type.dtype, base: '0u', strides, dims: tile.coreShape.map((d) => `${d}u`), load: (e) => `${row}[${e}]`, store: (e, v) => `${row}[${e}] = ${v};`, args: [] },
            declared: [],
          };
        }
        return {
          access: {
            origin, dtype: type.dtype, base, strides, dims: tile.coreShape.map((d) => `${d}u`),
            load: tracked ? (e) => `${tracked.load}(${e})` : (e) => `${name}[${e}]`,
            ...(memory ? { loadFromMemory: (e: string) => `${memory.load}(${e})` } : {}),
            store: tracked ? (e, v) => `${name}[${e}] = ${v}; ${tracked.written}[${e}] = 1u;` : (e, v) => `${name}[${e}] = ${v};`,
            args: [base],
          },
          declared: [`${base}: u32`],
        };
      }
      case 'local': {
        const ref = `(*${n})`;
        return {
          access: {
            origin, dtype: origin.dtype, base: '0u', strides: ['1u'], dims: [`${origin.length}u`],
            load: (e) => `${ref}[${e}]`, store: (e, v) => `${ref}[${e}] = ${v};`, args: [n],
          },
          declared: [`${n}: ptr<function, array<${repOfType(origin.dtype)}, ${origin.length}>>`],
        };
      }
    }
  }

  private tileCode() {
    return emitTileCode(
      this.layout.tiles,
      this.layout.tiles.map((t, i) => {
        return {
          tile: this.tileNames[i]!,
          written: this.tracked[i]?.written ?? '',
          // Rows are adjacent (loop stride = row size): main's `let` of where this workgroup's rows start.
          block: `block${i}`,
          load: this.storage[t.binding]!.load,
          store: this.storage[t.binding]!.store,
          ...(this.wideTiles[i] ? { storeWide: this.storage[t.binding]!.storeWide } : {}),
        };
      }),
      this.layout.workgroupSize,
      'rows',
      'lane',
      'e',
      'k',
      'held',
      this.layout.tiles.every((t, i) => t.init === 'zero' && !this.memory[i]),
    );
  }

  /** The entry point: one invocation per loop iteration. */
  private emitMain(): string {
    const { layout, kernel, slots, names } = this;
    const P = (slot: number) => `${names.params}[${slot}]`;
    const W = layout.workgroupSize;
    const staged = layout.tiles.length > 0;
    let out = `@compute @workgroup_size(${W})\n`;
    out += `fn ${ENTRY_POINT}(@builtin(workgroup_id) group: vec3u, @builtin(num_workgroups) groups: vec3u, @builtin(local_invocation_index) lane: u32) {\n`;
    out += `  let first = (group.y * groups.x + group.x) * ${W}u;\n  let item = first + lane;\n  let items = ${P(slots.loopSize)};\n`;
    if (this.support.has('js_opaque')) out += `  js_opaque = ${P(slots.opaqueZero)};\n`;
    if (!staged) out += '  if (item >= items) { return; }\n';

    // The loop index, per dimension (rank ≥ 2), innermost fastest.
    const R = layout.loopRank;
    if (R >= 2) {
      out += '  var rest = item;\n';
      for (let d = R - 1; d > 0; d--) out += `  let i${d} = rest % ${P(slots.loopShape[d]!)};\n  rest = rest / ${P(slots.loopShape[d]!)};\n`;
      out += '  let i0 = rest;\n';
    }
    const bases: string[] = [];
    layout.operands.forEach((op, j) => {
      if (op.binding === undefined || op.tile !== undefined) return;
      const s = slots.operands[j]!;
      let base = P(s.offset);
      if (R === 1 && op.step === 'unit') base += ' + item';
      else if (R === 1 && op.step === 'strided') base += ` + item * ${P(s.loopStrides[0]!)}`;
      else if (R >= 2) base += s.loopStrides.map((slot, d) => ` + i${d} * ${P(slot)}`).join('');
      const name = `base${j}`;
      bases[j] = name;
      out += `  let ${name} = ${base};\n`;
    });

    // Arguments of the kernel, in parameter order.
    const args: string[] = [];
    kernel.params.forEach((p, j) => {
      const op = layout.operands[j]!;
      const s = slots.operands[j]!;
      const dtype = isArrayType(p.type) ? p.type.dtype : (p.type as DType);
      if (!isArrayType(p.type)) {
        if (op.binding === undefined) args.push(scalarFromParams(P(s.scalar), dtype));
        else args.push(this.storage[op.binding]!.load(bases[j]!));
        return;
      }
      if (op.tile !== undefined) {
        if (!this.rowNames[op.tile]) args.push(`lane * ${layout.tiles[op.tile]!.pitch}u`);
        return;
      }
      args.push(bases[j]!);
      op.coreUnit.forEach((unit, a) => !unit && args.push(P(s.coreStrides[a]!)));
      s.coreShape.forEach((slot) => args.push(P(slot)));
    });
    if (kernel.randomStream) {
      const [lo, hi, first] = [...kernel.randomStream.key, kernel.randomStream.firstItem].map((v) => P(slots.operands[kernel.params.indexOf(v)]!.scalar));
      out += `  ${this.support.use('js_rng')} = vec4u(${lo}, ${hi}, ${first} + item, 0u);\n`;
    }
    let call = `${names.kernel}(${args.join(', ')});`;
    if (layout.kind === 'vectorize') {
      const o = kernel.params.length;
      const store = this.storage[layout.operands[o]!.binding!]!.store(bases[o]!, 'value');
      call = `let value = ${names.kernel}(${args.join(', ')});\n  ${this.checks ? `if (!${names.failed}) { ${store} }` : store}`;
    }
    if (!staged) return `${out}  ${call}\n}\n`;

    const tiles = this.tileCode();
    out += `  let rows = select(0u, min(${W}u, items - first), items > first);\n`;
    // In `let`s, read once: params is a storage buffer, which a compiler must assume the output
    // buffers may alias, so a params read inside the copy loops would be repeated after every store.
    layout.tiles.forEach((t, i) => {
      const operand = layout.operands.findIndex((o) => o.tile === i);
      const size = sizeOf(t.coreShape);
      out += `  let block${i} = ${P(slots.operands[operand]!.offset)} + first * ${size}u;\n`;
    });
    this.memory.forEach((t, i) => {
      // Where this workgroup's rows start in memory (tile element e is row e / pitch, column e % pitch).
      if (t) out += `  ${t.block} = block${i};\n`;
    });
    // The barrier after the loads (a kernel may read a row another invocation loaded).
    if (tiles.loads) out += tiles.loads + '  workgroupBarrier();\n';
    let rowCopies = '';
    this.rowNames.forEach((row, i) => {
      if (!row) return;
      const t = layout.tiles[i]!;
      // Written out element by element: a copy loop would index the row at run time, which puts
      // it in the invocation's memory unless the driver unrolls the loop.
      const copies = [...Array(sizeOf(t.coreShape)).keys()].map((k) => `${this.tileNames[i]}[lane * ${t.pitch}u + ${k}u] = ${row}[${k}u];`);
      for (let k = 0; k < copies.length; k += 4) rowCopies += `\n    ${copies.slice(k, k + 4).join(' ')}`;
    });
    out += `  if (item < items) {\n    ${call}${rowCopies}\n  }\n`;
    out += '  workgroupBarrier();\n' + tiles.stores;
    return out + '}\n';
  }
}

/**
 * Output tiles of rows up to this many elements, which start from zeros and are read only from
 * themselves, have each invocation compute its row in a private array (registers, once the
 * driver unrolls the kernel's loops) and copy it into the tile once, instead of reading and writing
 * workgroup memory at every step: on an H100 the Hermite `()->(n)` kernel (4,194,304 rows × 16)
 * ran 0.1225 ms instead of 0.150 (raw WGSL, clock warmed, same results bit for bit). Longer rows
 * would spill private arrays to local memory, so they keep computing in the tile.
 */
const PRIVATE_ROW_MAX = 64;

/**
 * Whether every access to a local array in `body` has constant indices within its length (and the
 * array is passed to no helper): then it can live in scalars, which drivers keep in registers,
 * where an array indexed at run time lives in the invocation's memory (unroll.ts).
 */
function constantlyIndexed(body: readonly Stmt[], array: Variable, length: number): boolean {
  let ok = true;
  const constant = (e: Expr) => {
    const k = constantValue(e);
    return k !== undefined && Number.isInteger(k) && k >= 0 && k < length;
  };
  forEachStmt(body, (s) => {
    if (s.kind === 'store' && s.array === array && !s.indices.every(constant)) ok = false;
  });
  forEachExpr(body, (e) => {
    if (e.kind === 'index' && e.array === array && !e.indices.every(constant)) ok = false;
    if (e.kind === 'call' && e.args.some((a) => a.kind === 'array-ref' && a.array === array)) ok = false;
  });
  return ok;
}

/**
 * A local array held as one scalar per element (`k_0`, `k_1`, …), each zero-filled as the array
 * would be (explicitly: see the local-array statement).
 */
function scalarArray(v: Variable, name: string, dtype: DType, length: number, namer: WgslNamer): ArrayAccess {
  const names = [...Array(length).keys()].map((k) => namer.fresh(`${name}_${k}`));
  const element = (e: string) => {
    const k = /^(\d+)u$/.exec(e);
    if (!k || Number(k[1]) >= length) throw new Error(`internal: the local array \`${v.name}\` held in scalars is indexed by \`${e}\`, not a constant below ${length}`);
    return names[Number(k[1])]!;
  };
  return {
    origin: { kind: 'local', dtype, length },
    dtype,
    base: '0u',
    strides: ['1u'],
    dims: [`${length}u`],
    load: element,
    store: (e, value) => `${element(e)} = ${value};`,
    args: [],
    declaration: names.map((n) => `var ${n}: ${repOfType(dtype)} = ${repOfType(dtype)}();`).join(' '),
  };
}

/** A JS scalar's value from its params slot (the host wrote its bits there). */
function scalarFromParams(slot: string, dtype: DType): string {
  switch (repOfType(dtype)) {
    case 'f32': return `bitcast<f32>(${slot})`;
    case 'u32': return slot;
    case 'bool': return `(${slot} != 0u)`;
    case 'i32': return `bitcast<i32>(${slot})`;
  }
}
