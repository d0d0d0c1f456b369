/**
 * The loop around a kernel: one generated JS function per (kernel, signature, memory layout), with
 * the kernel body inlined into the loop — no call per element, and for contiguous data no index
 * arithmetic beyond `offset + k`.
 *
 * A runner covers a range [start, end) of the flattened loop space, so the parallel target can
 * hand chunks of one call to several workers and run the very same code.
 */
import { type DType, isBigInt, isFloat } from '../../../dtypes.js';
import { KernelRuntimeError } from '../../../errors.js';
import type { Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';
import { isArrayType } from '../../../compiler/ir.js';
import { fastExpF32 } from '../fast-exp.js';
import { mergeLoopDims } from '../../../layout.js';
import type { CallPlan } from '../../../plan.js';
import { type ArrayAccess, declareLocalArrays, JsEmitter, RT } from './emit-js.js';

/**
 * How one operand moves along the innermost loop dimension. `origin` is a unit step from element 0
 * in a one-level loop (a whole typed array): its index is the loop counter itself, which V8 runs
 * measurably faster than `offset + k`.
 */
type InnerStep = 'scalar' | 'broadcast' | 'unit' | 'origin' | 'strided';

/** What the generated code is specialised on: equal layouts share code. */
export interface MemoryLayout {
  /** Loop dimensions after merging those that are contiguous for every operand (0, 1 or more → 2). */
  readonly rank: 0 | 1 | 2;
  readonly inner: readonly InnerStep[];
  /** Per operand, per core axis: whether its stride is 1. */
  readonly coreUnit: readonly (readonly boolean[])[];
  /**
   * Every array has fewer than 2³¹ elements, so offsets, strides and sizes are int32: the runner
   * says so (`| 0`), and V8 then indexes with integer arithmetic instead of checking doubles.
   */
  readonly int32Indices: boolean;
}

/** The data a runner reads, in plain arrays (also what is posted to workers). */
export interface RunnerArgs {
  readonly data: readonly ArrayLike<unknown>[];
  readonly offset: readonly number[];
  readonly loopShape: readonly number[];
  /** Per operand, per (merged) loop dimension. */
  readonly loopStrides: readonly (readonly number[])[];
  readonly coreShape: readonly (readonly number[])[];
  readonly coreStrides: readonly (readonly number[])[];
  readonly scalars: readonly (number | bigint | boolean | undefined)[];
}

export type Runner = (args: RunnerArgs, start: number, end: number) => void;

export function prepareRunnerArgs(plan: CallPlan): { args: RunnerArgs; layout: MemoryLayout } {
  const ops = plan.operands;
  const n = ops.length;
  // One-dimensional loops (every vectorize call on 1-D data) need no merging: this runs on every
  // call, so the common case avoids the general walk.
  const merged = plan.loopShape.length === 1
    ? { shape: plan.loopShape[0] === 1 ? [] : (plan.loopShape as number[]), strides: ops.map((o) => (plan.loopShape[0] === 1 ? [] : (o.loopStrides as number[]))) }
    : mergeLoopDims(plan.loopShape, ops.map((o) => o.loopStrides));
  const rank = Math.min(merged.shape.length, 2) as 0 | 1 | 2;
  const last = merged.shape.length - 1;
  const inner = new Array<InnerStep>(n);
  const coreUnit = new Array<boolean[]>(n);
  const data = new Array<ArrayLike<unknown>>(n);
  const offset = new Array<number>(n);
  const coreShape = new Array<readonly number[]>(n);
  const coreStrides = new Array<readonly number[]>(n);
  const scalars = new Array<number | bigint | boolean | undefined>(n);
  let int32Indices = true;
  for (let i = 0; i < n; i++) {
    const o = ops[i]!;
    const s = rank === 0 ? 0 : merged.strides[i]![last]!;
    inner[i] = o.scalar !== undefined ? 'scalar' : s === 0 ? 'broadcast' : s === 1 ? (rank === 1 && o.offset === 0 ? 'origin' : 'unit') : 'strided';
    const units: boolean[] = [];
    for (const c of o.coreStrides) units.push(c === 1);
    coreUnit[i] = units;
    data[i] = o.data as ArrayLike<unknown>;
    offset[i] = o.offset;
    coreShape[i] = o.coreShape;
    coreStrides[i] = o.coreStrides;
    scalars[i] = o.scalar;
    if ((o.data as ArrayLike<unknown>).length >= 2 ** 31) int32Indices = false;
  }
  const args: RunnerArgs = { data, offset, loopShape: merged.shape, loopStrides: merged.strides, coreShape, coreStrides, scalars };
  return { args, layout: { rank, inner, coreUnit, int32Indices } };
}

const STEP_CODES: Readonly<Record<InnerStep, number>> = { scalar: 0, broadcast: 1, unit: 2, strided: 3, origin: 4 };

/**
 * A key for a layout, equal for equal layouts. A number where it fits (it is looked up on every
 * call, and numbers hash faster than strings), else a string.
 */
export function layoutKey(layout: MemoryLayout): number | string {
  let code = layout.rank * 2 + (layout.int32Indices ? 1 : 0);
  for (const step of layout.inner) code = code * 5 + STEP_CODES[step];
  for (const axes of layout.coreUnit) for (const unit of axes) code = code * 2 + (unit ? 1 : 0);
  if (code < 2 ** 50) return code;
  return `${layout.rank}|${layout.int32Indices}|${layout.inner.join(',')}|${layout.coreUnit.map((c) => c.map((u) => (u ? '1' : 's')).join('')).join(',')}`;
}

/** The default result of a vectorize kernel that ends without `return`: what JS stores for `undefined`. */
function undefinedAs(t: DType): string {
  if (t === 'bool') return 'false';
  if (isBigInt(t)) return '0n';
  return isFloat(t) ? 'NaN' : '0';
}

/**
 * Generates the source of a runner.
 *
 * @returns the function body (for `new Function(...RUNTIME_NAMES, body)`) and the index-check sites
 */
export function generateRunner(plan: Pick<CallPlan, 'kind' | 'kernel' | 'nin' | 'boundsCheck'>, layout: MemoryLayout): { source: string; sites: string[] } {
  const { kernel } = plan;
  const nops = layout.inner.length;
  const arrays = new Map<Variable, ArrayAccess>();
  const head: string[] = [];
  for (let i = 0; i < nops; i++) {
    const int = layout.int32Indices ? ' | 0' : '';
    if (layout.inner[i] === 'scalar') head.push(`const $sc${i} = $a.scalars[${i}];`);
    else head.push(`const $d${i} = $a.data[${i}], $o${i} = $a.offset[${i}]${int};`);
    if (layout.inner[i] === 'strided') head.push(`const $is${i} = $a.loopStrides[${i}][$a.loopStrides[${i}].length - 1]${int};`);
    if (layout.rank === 2) head.push(`const $ls${i} = $a.loopStrides[${i}];`);
    const param = kernel.params[i];
    if (param && isArrayType(param.type)) {
      const axes = [...Array(param.type.ndim).keys()];
      for (const a of axes) {
        head.push(`const $n${i}_${a} = $a.coreShape[${i}][${a}]${int}${layout.coreUnit[i]![a] ? '' : `, $c${i}_${a} = $a.coreStrides[${i}][${a}]${int}`};`);
      }
      arrays.set(param, {
        data: `$d${i}`,
        base: `$b${i}`,
        strides: axes.map((a) => (layout.coreUnit[i]![a] ? '1' : `$c${i}_${a}`)),
        dims: axes.map((a) => `$n${i}_${a}`),
        dtype: param.type.dtype,
      });
    }
  }

  const vectorized = plan.kind === 'vectorize';
  const out = vectorized ? plan.nin : -1;
  const singleReturn = vectorized && kernel.body.length === 1 && kernel.body[0]!.kind === 'return';
  const emitter = new JsEmitter(arrays, plan.boundsCheck, (value) =>
    vectorized ? `{ $r = ${value ?? undefinedAs(kernel.returnType as DType)}; break $kernel; }` : 'break $kernel;',
  [], kernel.fastmath === true);
  emitter.prove(kernel.body);
  const helpers = kernel.helpers.map((h) => emitter.helper(h)).join('\n');
  const localArrays = declareLocalArrays(kernel.body, arrays);

  // Per element: operand bases, scalar parameters bound to their values, the body, the result.
  const ind = layout.rank === 2 ? '      ' : '    ';
  let element = '';
  for (let i = 0; i < nops; i++) {
    const step = layout.inner[i];
    if (step === 'scalar') continue;
    const [origin, k] = layout.rank === 2 ? [`$r${i}`, '$j'] : [`$o${i}`, '$k'];
    const base = step === 'broadcast' ? origin : step === 'origin' ? k : step === 'unit' ? `${origin} + ${k}` : `${origin} + ${k} * $is${i}`;
    element += `${ind}const $b${i} = ${base};\n`;
  }
  kernel.params.forEach((p, i) => {
    if (isArrayType(p.type)) return;
    const value = layout.inner[i] === 'scalar' ? `$sc${i}` : p.type === 'bool' ? `($d${i}[$b${i}] !== 0)` : `$d${i}[$b${i}]`;
    element += `${ind}let ${JsEmitter.varName(p)} = ${value};\n`;
  });
  if (singleReturn) {
    const ret = kernel.body[0] as Extract<Stmt, { kind: 'return' }>;
    element += `${ind}$d${out}[$b${out}] = ${ret.value ? emitter.stored(ret.value, kernel.returnType as DType) : undefinedAs(kernel.returnType as DType)};\n`;
  } else {
    const body = emitter.stmts(kernel.body, ind + '  ');
    if (vectorized) {
      element += `${ind}let $r = ${undefinedAs(kernel.returnType as DType)};\n${ind}$kernel: {\n${body}${ind}}\n`;
      element += `${ind}$d${out}[$b${out}] = $r;\n`;
    } else {
      element += `${ind}$kernel: {\n${body}${ind}}\n`;
    }
  }

  let loop: string;
  if (layout.rank < 2) {
    loop = `  for (let $k = $start; $k < $end; $k++) {\n${element}  }\n`;
  } else {
    const rowBases = [...Array(nops).keys()]
      .filter((i) => layout.inner[i] !== 'scalar')
      .map((i) => `    let $r${i} = $o${i};\n    for (let $q = 0; $q < $R - 1; $q++) $r${i} += $idx[$q] * $ls${i}[$q];\n`)
      .join('');
    loop = [
      '  const $shape = $a.loopShape, $R = $shape.length, $inner = $shape[$R - 1];',
      '  const $idx = new Array($R).fill(0);',
      '  for (let $q = $R - 1, $rem = $start; $q >= 0; $q--) { $idx[$q] = $rem % $shape[$q]; $rem = ($rem - $idx[$q]) / $shape[$q]; }',
      '  let $k = $start;',
      '  while ($k < $end) {',
      rowBases + '    const $j0 = $idx[$R - 1], $count = Math.min($inner - $j0, $end - $k);',
      '    for (let $j = $j0; $j < $j0 + $count; $j++) {',
      element + '    }',
      '    $k += $count;',
      '    $idx[$R - 1] = 0;',
      '    for (let $q = $R - 2; $q >= 0; $q--) { if (++$idx[$q] < $shape[$q]) break; $idx[$q] = 0; }',
      '  }',
      '',
    ].join('\n');
  }
  const source =
    `"use strict";\n${helpers}${localArrays}` +
    `return function ${safeName(kernel.name)}$run($a, $start, $end) {\n  ${head.join('\n  ')}\n${loop}};\n`;
  return { source, sites: emitter.sites };
}

function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9_$]/g, '_');
}

const CLAMP_SCRATCH = new Uint8ClampedArray(1);

/** Support functions the generated code calls; passed in by name so the code has no imports. */
export function runtimeFunctions(sites: readonly string[]): Record<string, Function> {
  return {
    [RT.oob]: (site: number, index: number[], dims: number[]) => {
      throw new KernelRuntimeError(
        `Index [${index.join(', ')}] is out of bounds for ${sites[site]} (its shape is [${dims.join(', ')}]). ` +
          'The outputs may be partially written.',
      );
    },
    [RT.toInt64]: (x: number) => (Number.isFinite(x) ? BigInt.asIntN(64, BigInt(Math.trunc(x))) : 0n),
    [RT.toUint64]: (x: number) => (Number.isFinite(x) ? BigInt.asUintN(64, BigInt(Math.trunc(x))) : 0n),
    // Uint8ClampedArray's own store (clamp to 0…255, round half to even, NaN → 0), through a scratch element.
    [RT.toUint8Clamped]: (x: number) => ((CLAMP_SCRATCH[0] = x), CLAMP_SCRATCH[0]!),
    [RT.div64]: (a: bigint, b: bigint, signed: boolean) => (b === 0n ? 0n : signed ? BigInt.asIntN(64, a / b) : a / b),
    [RT.rem64]: (a: bigint, b: bigint) => (b === 0n ? 0n : a % b),
    [RT.fastExpF32]: fastExpF32,
  };
}

/** Compiles generated source into a runner. */
export function instantiateRunner(source: string, sites: readonly string[]): Runner {
  const rt = runtimeFunctions(sites);
  const factory = new Function(...Object.keys(rt), source) as (...fns: Function[]) => Runner;
  return factory(...Object.values(rt));
}

/**
 * A vectorize kernel as a plain JS function of its scalar arguments, for the ufunc methods
 * (`reduce`, `accumulate`) that fold one element at a time.
 */
export function generateScalarFunction(kernel: TypedKernel): { source: string; sites: string[] } {
  const emitter = new JsEmitter(new Map(), true, (value) => `return ${value ?? undefinedAs(kernel.returnType as DType)};`, [], kernel.fastmath === true);
  const helpers = kernel.helpers.map((h) => emitter.helper(h)).join('\n');
  const params = kernel.params.map((p) => JsEmitter.varName(p)).join(', ');
  emitter.prove(kernel.body);
  const body = emitter.stmts(kernel.body, '  ');
  const source = `"use strict";\n${helpers}return function ${safeName(kernel.name)}(${params}) {\n${body}  return ${undefinedAs(kernel.returnType as DType)};\n};\n`;
  return { source, sites: emitter.sites };
}

export function instantiateScalarFunction(kernel: TypedKernel): (...args: unknown[]) => unknown {
  const { source, sites } = generateScalarFunction(kernel);
  const rt = runtimeFunctions(sites);
  return (new Function(...Object.keys(rt), source) as (...fns: Function[]) => (...args: unknown[]) => unknown)(...Object.values(rt));
}
