/**
 * The loop around a kernel: one generated JS function per (kernel, signature, memory layout), with
 * the kernel body inlined into the loop — no call per element, and for contiguous data no index
 * arithmetic beyond `offset + k`.
 *
 * A runner covers a range [start, end) of the flattened loop space, so the parallel target can
 * hand chunks of one call to several workers and run the very same code.
 */
import { type DType, isBigInt, isFloat } from '../../../dtypes.js';
import { CallTimeoutError } from '../../../errors.js';
import { type IndexCheckSite, indexError } from '../../../compiler/source-excerpt.js';
import type { Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';
import { isArrayType } from '../../../compiler/ir.js';
import { fastExpF32 } from '../fast-exp.js';
import { tableBytes } from '../../../compiler/tables.js';
import type { CallPlan } from '../../../plan.js';
import { type ArrayAccess, DEADLINE_CHECK, DEADLINE_COUNTER, DEADLINE_SUPPORT, declareLocalArrays, JsEmitter, RANDOM_STATE, RT } from './emit-js.js';
import { drawFloat32, drawFloat64 } from '../../../compiler/random-stream.js';
import type { MemoryLayout, Runner } from '../memory-layout.js';

/** The default result of a vectorize kernel that ends without `return`: what JS stores for `undefined`. */
function undefinedAs(t: DType): string {
  if (t === 'bool') return 'false';
  if (isBigInt(t)) return '0n';
  return isFloat(t) ? 'NaN' : '0';
}

/**
 * Generates the source of a runner.
 *
 * @returns the function body (for `new Function(...RUNTIME_NAMES, body)`, which returns the runner
 *   and its count of priming calls: {@link instantiateRunner}) and the index-check sites
 */
export function generateRunner(plan: Pick<CallPlan, 'kind' | 'kernel' | 'nin' | 'boundsCheck'>, layout: MemoryLayout, deadlineChecks = false): { source: string; sites: IndexCheckSite[] } {
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
  [], deadlineChecks);
  const tables = emitter.declareTables(kernel.tables);
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

  if (kernel.randomStream) {
    const [lo, hi, first] = [...kernel.randomStream.key, kernel.randomStream.firstItem].map((v) => kernel.params.indexOf(v));
    head.push(`$rngKey0 = $a.scalars[${lo}]; $rngKey1 = $a.scalars[${hi}]; const $rngFirst = $a.scalars[${first}];`);
    element = `${ind}$rngItem = $rngFirst + ${layout.rank === 2 ? '$k + ($j - $j0)' : '$k'}; $rngDraw = 0;\n${element}`;
  }
  // With a deadline, the element loop checks it too (a long call of short kernels), and `$a.deadline` sets it.
  if (deadlineChecks) element = `${ind}${DEADLINE_CHECK}\n${element}`;
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
  if (deadlineChecks) head.unshift('$deadline = $a.deadline ?? Infinity;', DEADLINE_COUNTER);
  const prologue = `  ${head.join('\n  ')}\n`;
  const runner = `function ${safeName(kernel.name)}$run($a, $start, $end) {\n${prologue}${loop}}`;
  const primingCalls = Math.min(MAX_PRIMING_CALLS, Math.ceil((PRIMING_FACTOR * runner.length) / prologue.length));
  const source =
    `"use strict";\n${deadlineChecks ? DEADLINE_SUPPORT : ''}${kernel.randomStream ? RANDOM_STATE : ''}${tables}${helpers}${localArrays}` +
    `return { runner: ${runner}, primingCalls: ${primingCalls} };\n`;
  return { source, sites: emitter.sites };
}

/**
 * A runner's first call is preceded by calls over an empty range, which run only its prologue (the
 * reads of `$a`), this many times its source's length over the prologue's: enough for V8 to give
 * the runner its feedback vector, which V8 allocates only after a function has run bytecode worth 8×
 * its size. Without it the first call reads `$a` before there is feedback to record, its loop is
 * optimized mid-call (on-stack replacement), the whole function is then optimized with no feedback for
 * those reads and deoptimizes on entry, and V8 went on entering the loop's on-stack-replacement code
 * call after call: 2.5× slower for a loop with a bounds check (one row of 2^20, `acc = acc * 0.5 +
 * x[i]`: 6–7 ms against 2.1–2.5 primed, in 3 of 4 processes; bench/results/js-engine-isolation-*.md).
 * Primed with 16 calls it still stuck; 24 and more did not.
 */
const PRIMING_FACTOR = 16;
/** At ~0.5 µs per empty call in V8's interpreter, at most ~1 ms once per runner. */
const MAX_PRIMING_CALLS = 2000;

function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9_$]/g, '_');
}

const CLAMP_SCRATCH = new Uint8ClampedArray(1);

/** Support functions the generated code calls; passed in by name so the code has no imports. */
export function runtimeFunctions(sites: readonly IndexCheckSite[]): Record<string, Function> {
  return {
    [RT.timeout]: () => {
      throw new CallTimeoutError('The call on the cpu target did not finish within its `timeout` and was stopped inside the kernel. Its outputs may be partially written.');
    },
    [RT.oob]: (site: number, index: number[], dims: number[]) => {
      throw indexError(sites, site, index, dims);
    },
    [RT.toInt64]: (x: number) => (Number.isFinite(x) ? BigInt.asIntN(64, BigInt(Math.trunc(x))) : 0n),
    [RT.toUint64]: (x: number) => (Number.isFinite(x) ? BigInt.asUintN(64, BigInt(Math.trunc(x))) : 0n),
    // Uint8ClampedArray's own store (clamp to 0…255, round half to even, NaN → 0), through a scratch element.
    [RT.toUint8Clamped]: (x: number) => ((CLAMP_SCRATCH[0] = x), CLAMP_SCRATCH[0]!),
    [RT.div64]: (a: bigint, b: bigint, signed: boolean) => (b === 0n ? 0n : signed ? BigInt.asIntN(64, a / b) : a / b),
    [RT.rem64]: (a: bigint, b: bigint) => (b === 0n ? 0n : a % b),
    [RT.fastExpF32]: fastExpF32,
    [RT.drawFloat64]: drawFloat64,
    [RT.drawFloat32]: drawFloat32,
    [RT.table]: tableBytes,
  };
}

/** Compiles generated source into a runner, which primes itself on its first call (see {@link PRIMING_FACTOR}). */
export function instantiateRunner(source: string, sites: readonly IndexCheckSite[]): Runner {
  const rt = runtimeFunctions(sites);
  const factory = new Function(...Object.keys(rt), source) as (...fns: Function[]) => { runner: Runner; primingCalls: number };
  const { runner, primingCalls } = factory(...Object.values(rt));
  let primed = false;
  return (args, start, end) => {
    if (!primed) {
      primed = true;
      for (let i = 0; i < primingCalls; i++) runner(args, start, start);
    }
    runner(args, start, end);
  };
}

/**
 * A vectorize kernel as a plain JS function of its scalar arguments, for the ufunc methods
 * (`reduce`, `accumulate`) that fold one element at a time.
 */
export function generateScalarFunction(kernel: TypedKernel): { source: string; sites: IndexCheckSite[] } {
  const emitter = new JsEmitter(new Map(), true, (value) => `return ${value ?? undefinedAs(kernel.returnType as DType)};`);
  const tables = emitter.declareTables(kernel.tables);
  const helpers = kernel.helpers.map((h) => emitter.helper(h)).join('\n');
  const params = kernel.params.map((p) => JsEmitter.varName(p)).join(', ');
  emitter.prove(kernel.body);
  const body = emitter.stmts(kernel.body, '  ');
  const source = `"use strict";\n${tables}${helpers}return function ${safeName(kernel.name)}(${params}) {\n${body}  return ${undefinedAs(kernel.returnType as DType)};\n};\n`;
  return { source, sites: emitter.sites };
}

