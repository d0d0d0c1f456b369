/**
 * Fusing around a guvectorize call: which element-wise calls of a trace run per element of which
 * core slice, whether the gufunc's kernel lets them (compiler/compose-gufunc.ts composes them),
 * the fused guvectorize ufunc's layout and signature, and the per-call check that the arrays
 * line up with the core dimensions as the separate calls would broadcast them.
 *
 * `scale(normalize(x), w)` with normalize `(n)->(n)`: the fused kernel is `(n),(n)->(n)` over x and
 * w. `rowSum(square(x))` with rowSum `(n)->()`: `(n)->()` over x. An array read over core
 * dimensions must have them (an array the separate calls broadcast along a core dimension, shape
 * `(m, 1)` against rows of n, is read per row by the fused kernel: such a call does not fuse).
 */
import { makeCallable, type Ufunc } from '../callable.js';
import type { CallOptions } from '../call-options.js';
import { composeAroundGufunc, type ElementwiseStep, type GufuncInput, gufuncUses } from '../compiler/compose-gufunc.js';
import type { StepInput } from '../compiler/compose.js';
import { isArrayType, type TypedKernel, type ValueType } from '../compiler/ir.js';
import { runPasses } from '../compiler/passes/index.js';
import type { DType } from '../dtypes.js';
import { toOperand } from '../ndarray.js';
import { type ArgType, type CoreDim, formatCoreDims, parseLayout } from '../signature-parser/index.js';
import { formatArgType } from '../signature-parser/types.js';
import { UfuncDefinition, type UfuncOptions } from '../ufunc.js';
import type { FusedParam } from './plan.js';
import { type TracedCall, Tracer } from './trace.js';

type Specialisation = ReturnType<UfuncDefinition['select']>;

/** A planned step: an element-wise call's typed kernel, or the gufunc (typed per call's core sizes). */
export interface PlannedStep {
  readonly call: TracedCall;
  readonly kernel?: TypedKernel;
  readonly gufunc?: { readonly def: UfuncDefinition; readonly spec: Specialisation };
  readonly inputs: readonly StepInput[];
  readonly key: string;
}

/** Around a guvectorize call: the core dimensions each element-wise call of the chain runs over. */
export interface Cores {
  readonly kind: 'cores';
  readonly gufunc: TracedCall;
  /** By trace index of an element-wise call: the core dimensions of the value it computes an element of. */
  readonly ofCall: ReadonlyMap<number, readonly CoreDim[]>;
  /** By trace index of an element-wise call: where it runs, `in k` (computing the gufunc's input k) or `out` (after it). */
  readonly contextOf: ReadonlyMap<number, string>;
  /** Whether element-wise calls follow the gufunc (the fused kernel then writes their result where the gufunc writes its own). */
  readonly writesThrough: boolean;
}

/** A planned chain around a gufunc: what fusedUfunc and the fused call need. */
export interface AroundGufunc {
  /** The gufunc call, for messages. */
  readonly gufunc: string;
  /** The fused ufunc's layout (`(n),(n)->(n)`) and its one signature. */
  readonly layout: string;
  readonly signature: string;
  readonly params: readonly FusedParam[];
  /** The fused kernel for a call's core sizes (operands in the layout's order, `()` slices as [1]). */
  readonly kernelFor: (coreShapes: readonly (readonly number[])[]) => TypedKernel;
  /**
   * Why a call with these kernel arguments and options cannot run as the fused kernel and give the
   * separate calls' results, or undefined when it can.
   */
  readonly check: (fusedArgs: readonly unknown[], options: CallOptions) => string | undefined;
  /** The fused kernel for the core sizes of these kernel arguments (for `explainIr`). */
  readonly kernelForArguments: (fusedArgs: readonly unknown[]) => TypedKernel;
}

/**
 * Where each element-wise call runs in a kernel built around the gufunc `g`: a call that `g`
 * reads (directly or through other calls) is computed per element of that input's core slice; a
 * call after `g` per element of `g`'s output. A call needed over two different core layouts, or
 * a gufunc that does not fit (several outputs, output-only core dimensions), does not fuse.
 */
export function coresAround(g: TracedCall, calls: readonly TracedCall[], last: TracedCall): Cores | { kind: 'unfusable'; reason: string } {
  const { layout } = g.def;
  if (layout.outputs.length !== 1) return { kind: 'unfusable', reason: `${g.what} has ${layout.outputs.length} outputs; a fused function returns one result` };
  const inputNames = new Set(layout.inputs.flat().map((d) => formatCoreDims([d])));
  const outputOnly = layout.outputs[0]!.find((d) => d.kind === 'symbol' && !inputNames.has(formatCoreDims([d])));
  if (outputOnly) return { kind: 'unfusable', reason: `${g.what} has the output-only core dimension ${formatCoreDims([outputOnly])} (\`dims\`), which a call inside a fused function cannot pass` };
  const ofCall = new Map<number, readonly CoreDim[]>();
  const contextOf = new Map<number, string>();
  let conflict: string | undefined;
  const visit = (call: TracedCall, core: readonly CoreDim[], context: string): void => {
    if (call === g) {
      layout.inputs.forEach((c, k) => {
        const x = g.args[k];
        if (x instanceof Tracer && x.value.kind === 'call') visit(calls[x.value.index]!, c, `in ${k}`);
      });
      return;
    }
    const known = ofCall.get(call.index);
    if (known) {
      if (contextOf.get(call.index) !== context) conflict ??= `${call.what} is needed both ${describeContext(contextOf.get(call.index)!, g)} and ${describeContext(context, g)}; one kernel computes it in one place`;
      return;
    }
    ofCall.set(call.index, core);
    contextOf.set(call.index, context);
    for (const a of call.args) if (a instanceof Tracer && a.value.kind === 'call') visit(calls[a.value.index]!, core, context);
  };
  visit(last, layout.outputs[0]!, 'out');
  return conflict ? { kind: 'unfusable', reason: conflict } : { kind: 'cores', gufunc: g, ofCall, contextOf, writesThrough: last !== g };
}

function describeContext(context: string, g: TracedCall): string {
  return context === 'out' ? `after ${g.what}` : `for input ${Number(context.slice(3)) + 1} of ${g.what}`;
}

/** The gufunc's kernel for a specialisation, when typing it needs no core dimension size (else undefined: it is typed per call). */
export function kernelWithoutCoreSizes(def: UfuncDefinition, spec: Specialisation): TypedKernel | undefined {
  try {
    return def.kernelFor(spec, []).kernel;
  } catch {
    return undefined;
  }
}

/** Why the gufunc's kernel cannot have element-wise steps before or after it, or undefined. */
export function gufuncRefusal(g: TracedCall, kernel: TypedKernel, rawInputs: readonly unknown[], cores: Cores): string | undefined {
  const { readsOutput, wholeUses } = gufuncUses(kernel);
  if (cores.writesThrough && readsOutput) return `${g.what} reads back its own output, so the element-wise calls after it cannot run where it writes each element`;
  if (cores.writesThrough && wholeUses.has(g.def.nin)) return `${g.what} passes its whole output to a helper function, so the element-wise calls after it cannot run where it writes each element`;
  for (const k of wholeUses) {
    const x = rawInputs[k];
    if (k < g.def.nin && x instanceof Tracer && x.value.kind === 'call') {
      return `${g.what} passes its input ${k + 1}, ${x.what}, whole to a helper function or a variable; a fused kernel computes such an input only element by element where it is read`;
    }
  }
  return undefined;
}

/** A fused kernel parameter's type for a gufunc's argument type. */
export function paramType(t: ArgType): ValueType {
  return t.kind === 'array' ? { kind: 'array', dtype: t.dtype, ndim: t.ndim } : t.dtype;
}

/**
 * The plan's kernel maker, signature and per-call check for a chain around the gufunc.
 *
 * @param steps - the planned steps, the gufunc among them, each after the steps it reads
 * @param params - the fused kernel's input parameters (types and cores set)
 * @param stepOf - trace index → step index
 * @param cores - from coresAround
 * @param last - the call whose result the fused function returns
 */
export function aroundGufunc(steps: readonly PlannedStep[], params: readonly FusedParam[], stepOf: ReadonlyMap<number, number>, cores: Cores, last: TracedCall): AroundGufunc {
  const gi = stepOf.get(cores.gufunc.index)!;
  const g = steps[gi]!.gufunc!;
  const renumber = (input: StepInput): GufuncInput => {
    if (input.kind === 'param') return input;
    return input.index === gi ? { kind: 'gufunc' } : { kind: 'step', index: input.index < gi ? input.index : input.index - 1 };
  };
  const elementwise = steps.filter((_, k) => k !== gi);
  const result = renumber({ kind: 'step', index: stepOf.get(last.index)! });
  const gOut = g.def.operandTypes(g.spec.signature)[g.def.nin]! as Extract<ArgType, { kind: 'array' }>;
  const resultDtype: DType = result.kind === 'gufunc' ? gOut.dtype : (elementwise[result.index]!.kernel!.returnType as DType);
  const outCore = g.def.layout.outputs[0]!;
  const layout = `${params.map((p) => formatCoreDims(p.core)).join(',')}->${formatCoreDims(outCore)}`;
  const typeText = (t: ValueType) => (isArrayType(t) ? formatArgType({ kind: 'array', dtype: t.dtype, ndim: t.ndim }) : t);
  const signature = `void(${[...params.map((p) => typeText(p.type)), typeText({ kind: 'array', dtype: resultDtype, ndim: gOut.ndim })].join(', ')})`;
  const built = new Map<string, TypedKernel>();

  const kernelFor = (coreShapes: readonly (readonly number[])[]): TypedKernel => {
    const dimsKey = JSON.stringify(coreShapes);
    let kernel = built.get(dimsKey);
    if (kernel) return kernel;
    // Core sizes by name, from the fused operands; then the gufunc's operands' core shapes.
    const sizes = new Map<string, number>();
    [...params.map((p) => p.core), outCore].forEach((core, k) => core.forEach((d, a) => sizes.set(formatCoreDims([d]), coreShapes[k]?.[a] ?? 1)));
    const gTypes = g.def.operandTypes(g.spec.signature);
    const gShapes = [...g.def.layout.inputs, ...g.def.layout.outputs].map((core, k) =>
      core.length === 0 && gTypes[k]!.kind === 'array' ? [1] : core.map((d) => (d.kind === 'fixed' ? d.size : sizes.get(formatCoreDims([d]))!)),
    );
    const gKernel = g.def.kernelFor(g.spec, gShapes).kernel;
    const composed = composeAroundGufunc({
      params: params.map((p) => ({ name: p.name, type: p.type })),
      steps: elementwise.map((s): ElementwiseStep => ({ kernel: s.kernel!, inputs: s.inputs.map(renumber) })),
      gufunc: { kernel: gKernel, inputs: steps[gi]!.inputs.map(renumber) },
      result,
      name: steps.map((s) => s.kernel?.name ?? g.def.parsed.name).join(' > '),
    });
    kernel = runPasses(composed);
    if (built.size >= 64) built.delete(built.keys().next().value!);
    built.set(dimsKey, kernel);
    return kernel;
  };

  const check = (fusedArgs: readonly unknown[], options: CallOptions): string | undefined => {
    for (const option of ['axes', 'axis', 'keepdims', 'dims'] as const) {
      if (options[option] !== undefined) return `the fused call passes \`${option}\`, which would place the core dimensions of every array of the fused kernel, not only those of ${last.what}`;
    }
    if (options.where !== undefined && options.where !== true && outCore.length > 0 && cores.writesThrough) {
      return `the fused call passes \`where\`, which masks whole core slices of the fused kernel's output but single elements of ${last.what}'s`;
    }
    return misalignedCore(params, fusedArgs, cores.gufunc);
  };
  const kernelForArguments = (fusedArgs: readonly unknown[]): TypedKernel => {
    const sizes = new Map<string, number>();
    params.forEach((p, k) => {
      const op = p.core.length ? toOperand(fusedArgs[k], p.from) : undefined;
      if (op && op.kind !== 'scalar') p.core.forEach((d, a) => sizes.set(formatCoreDims([d]), op.shape[op.shape.length - p.core.length + a]!));
    });
    const shapeOf = (core: readonly CoreDim[], t: ValueType) => (core.length === 0 && isArrayType(t) ? [1] : core.map((d) => (d.kind === 'fixed' ? d.size : sizes.get(formatCoreDims([d])) ?? 1)));
    return kernelFor([...params.map((p) => shapeOf(p.core, p.type)), shapeOf(outCore, { kind: 'array', dtype: resultDtype, ndim: gOut.ndim })]);
  };
  return { gufunc: cores.gufunc.what, layout, signature, params, kernelFor, check, kernelForArguments };
}

/**
 * Why an array read over core dimensions lacks them as the separate calls would broadcast it
 * (fewer dimensions, or size 1 where the others have n), or undefined.
 */
function misalignedCore(params: readonly FusedParam[], args: readonly unknown[], g: TracedCall): string | undefined {
  const sizes = new Map<string, number>();
  const shapes = params.map((p, k) => {
    if (p.core.length === 0 || !isArrayType(p.type)) return undefined;
    const op = toOperand(args[k], p.from);
    return op.kind === 'scalar' ? undefined : op.shape;
  });
  params.forEach((p, k) => {
    const shape = shapes[k];
    if (!shape) return;
    p.core.forEach((d, a) => {
      const size = shape[shape.length - p.core.length + a];
      if (size !== undefined && size !== 1) sizes.set(formatCoreDims([d]), size);
    });
  });
  for (let k = 0; k < params.length; k++) {
    const p = params[k]!;
    const shape = shapes[k];
    if (!shape) continue;
    const core = formatCoreDims(p.core);
    if (shape.length < p.core.length) {
      return `${p.from} has ${shape.length} dimension${shape.length === 1 ? '' : 's'} and is read over the core dimensions ${core} around ${g.what}; the separate calls broadcast it along them, the fused kernel would not`;
    }
    for (let a = 0; a < p.core.length; a++) {
      const d = p.core[a]!;
      const want = d.kind === 'fixed' ? d.size : sizes.get(formatCoreDims([d]));
      if (shape[shape.length - p.core.length + a] === 1 && want !== undefined && want !== 1) {
        return `${p.from} (shape [${shape.join(', ')}]) has size 1 along the core dimension ${formatCoreDims([d])} of ${core} around ${g.what}, whose size is ${want}: the separate calls broadcast it along that dimension, the fused kernel reads it per core slice`;
      }
    }
  }
  return undefined;
}

/**
 * The fused kernel as a guvectorize ufunc the front runs like any other: one signature, the
 * fused layout, and the composed kernel (made per call's core sizes) in place of a typed source.
 */
class FusedGufuncDefinition extends UfuncDefinition {
  constructor(
    private readonly around: AroundGufunc,
    private readonly fusedKey: string,
    target: string,
    boundsCheck: boolean,
  ) {
    const names = [...around.params.map((_, i) => `p${i}`), 'out'];
    // The front types this stand-in for the signature; kernelFor hands out the composed kernel instead.
    const placeholder = `function fused(${names.join(', ')}) {}`;
    super('guvectorize', placeholder, [around.signature], parseLayout(around.layout), { target: target as NonNullable<UfuncOptions['target']>, boundsCheck });
  }

  override kernelFor(_spec: Specialisation, coreShapes: readonly (readonly number[])[]): { kernel: TypedKernel; key: string } {
    return { kernel: this.around.kernelFor(coreShapes), key: `${this.fusedKey}:${JSON.stringify(coreShapes)}` };
  }
}

let nextFused = 0;

/** The fused guvectorize ufunc of a chain around a gufunc. */
export function fusedGufunc(around: AroundGufunc, target: string, boundsCheck: boolean): Ufunc {
  return makeCallable(new FusedGufuncDefinition(around, `fused-gufunc:${nextFused++}`, target, boundsCheck), {});
}
