/**
 * A held chain of gpu calls (chain-fusion.ts) as one plan: a kernel of layout `(),…->(),…` over the
 * calls' loop that runs their kernels composed (compiler/compose.ts), its inputs the calls' inputs
 * that no held call wrote (each view once), its outputs the calls' outputs the user still holds
 * (each view once, from its last writer).
 *
 * A program runs the same chain again and again, so what the chain composes to — which operand of
 * which call each input is, which calls store, the fused kernel — is worked out once per *shape*
 * of chain and kept: the recipes of its calls (dispatch.ts keeps one per call signature and device,
 * so the same recipe means the same kernel, dtypes, offsets, strides and buffer sizes), which
 * operands share a buffer across the calls, which outputs the user destroyed and which calls check
 * indices. Looking a chain up compares objects and small integers; it builds no strings, and the
 * plan it returns carries the slot where dispatch.ts keeps the fused call's own layout, so a chain
 * seen before is laid out once, not once per run.
 */
import type { TypedKernel } from '../../../compiler/ir.js';
import type { DType } from '../../../dtypes.js';
import { composeStores, type ComposedStep, type StepInput } from '../../../compiler/compose.js';
import type { CallPlan, OperandView } from '../../../plan.js';
import type { DeviceArray } from './device-array.js';
import type { GPUBuffer } from './webgpu-types.js';

/**
 * What dispatch.ts keeps to record calls of one signature on one device (opaque here): the same
 * recipe for two calls means they compile and bind alike.
 */
export interface CallRecipe {
  /** Its compiled kernel checks indices at run time (it has bounds-check sites). */
  readonly checks: boolean;
}

/** Where dispatch.ts keeps the fused call's recipe once its pipeline is ready (one per chain shape). */
export interface FusedSlot {
  recipe?: CallRecipe;
}

/** The held calls as one call, and where its recipe is kept. */
export interface FusedCall {
  readonly plan: CallPlan;
  readonly slot: FusedSlot;
}

/** What a shape of chain composes to: the fused call's operands, as operands of the calls. */
interface ChainShape {
  /** The key beyond the recipes: per operand of the calls, the first one in the same buffer (-1: a scalar). */
  readonly wiring: Int32Array;
  /** Bit k: call k's output is destroyed; bit 16 + k: call k checks indices. */
  readonly flags: number;
  /** Undefined when the calls do not compose (they run one by one). */
  readonly fused?: {
    readonly kernel: TypedKernel;
    readonly kernelKey: string;
    /** Per fused input: the call and operand it is, as pairs (call, operand). */
    readonly inputs: readonly number[];
    /** The calls whose outputs are stored, in the order of the fused outputs. */
    readonly stores: readonly number[];
    readonly boundsCheck: boolean;
    readonly slot: FusedSlot;
  };
}

/** Shapes of chains, by the recipes of their calls in order (a trie keyed by the recipes). */
interface ShapeNode {
  readonly next: WeakMap<CallRecipe, ShapeNode>;
  shapes: ChainShape[];
}
const shapeRoot: ShapeNode = { next: new WeakMap(), shapes: [] };
/** Shapes kept per sequence of recipes (the wiring and flags that differ): a program has few. */
const MAX_SHAPES_PER_NODE = 16;

/** Fused kernels by composition key (bounded: a program makes few distinct chains). */
const composed = new Map<string, TypedKernel>();
const MAX_COMPOSED = 256;
/** Kernels this module composed: each writes every element of every output (dispatch.ts skips zeroing them). */
const wholeOutputs = new WeakSet<TypedKernel>();

/** Whether a kernel is a fused chain's, which writes every element of each output. */
export function writesWholeOutputs(kernel: TypedKernel): boolean {
  return wholeOutputs.has(kernel);
}

/** How many chain shapes were worked out (each once; for tests of the memo). */
export const chainShapeStats = { built: 0 };

const bufferOf = (o: OperandView): GPUBuffer => (o.data as unknown as DeviceArray).buffer;
const ONE: readonly number[] = [1];

/** Per operand of the calls (in order), the index of the first operand in the same buffer; -1 for a scalar. */
let wiringScratch = new Int32Array(32);
const buffersScratch: (GPUBuffer | undefined)[] = [];

/**
 * The held calls as one plan, or 'nothing' when the user destroyed every output, or undefined
 * when the calls cannot be composed (they run one by one).
 *
 * @param calls the held calls, in call order (chain-fusion.ts checked that they may fuse)
 * @param recipes what records each call alone, from dispatch.ts
 */
export function fusedCall(calls: readonly CallPlan[], recipes: readonly CallRecipe[]): FusedCall | 'nothing' | undefined {
  let node = shapeRoot;
  for (const recipe of recipes) {
    let next = node.next.get(recipe);
    if (!next) node.next.set(recipe, (next = { next: new WeakMap(), shapes: [] }));
    node = next;
  }
  const count = wire(calls);
  let flags = 0;
  calls.forEach((c, k) => {
    if ((c.operands[c.nin]!.data as unknown as DeviceArray).destroyed) flags |= 1 << k;
    if (c.boundsCheck && recipes[k]!.checks) flags |= 1 << (16 + k);
  });
  let shape = node.shapes.find((s) => s.flags === flags && sameWiring(s.wiring, count));
  if (!shape) {
    shape = buildShape(calls, wiringScratch.slice(0, count), flags);
    if (node.shapes.length >= MAX_SHAPES_PER_NODE) node.shapes.shift();
    node.shapes.push(shape);
  }
  const fused = shape.fused;
  if (!fused) return undefined;
  if (fused.stores.length === 0) return 'nothing';
  const operands: OperandView[] = [];
  for (let p = 0; p < fused.inputs.length; p += 2) operands.push(calls[fused.inputs[p]!]!.operands[fused.inputs[p + 1]!]!);
  for (const k of fused.stores) {
    const out = calls[k]!.operands[calls[k]!.nin]!;
    operands.push({ dtype: out.dtype, data: out.data, offset: out.offset, loopStrides: out.loopStrides, coreShape: ONE, coreStrides: ONE });
  }
  const plan: CallPlan = {
    kind: 'guvectorize',
    kernel: fused.kernel,
    kernelKey: fused.kernelKey,
    loopShape: calls[0]!.loopShape,
    operands,
    nin: fused.inputs.length / 2,
    boundsCheck: fused.boundsCheck,
  };
  return { plan, slot: fused.slot };
}

/** Fills {@link wiringScratch} for the calls' operands; returns how many there are. */
function wire(calls: readonly CallPlan[]): number {
  let count = 0;
  for (const c of calls) count += c.operands.length;
  if (wiringScratch.length < count) wiringScratch = new Int32Array(count * 2);
  buffersScratch.length = count;
  let n = 0;
  for (const c of calls) {
    for (const o of c.operands) {
      const buffer = o.scalar === undefined ? bufferOf(o) : undefined;
      buffersScratch[n] = buffer;
      let first = -1;
      if (buffer) {
        first = n;
        for (let m = 0; m < n; m++) {
          if (buffersScratch[m] === buffer) {
            first = m;
            break;
          }
        }
      }
      wiringScratch[n++] = first;
    }
  }
  buffersScratch.fill(undefined); // no buffer kept alive by the scratch
  return count;
}

function sameWiring(wiring: Int32Array, count: number): boolean {
  if (wiring.length !== count) return false;
  for (let i = 0; i < count; i++) if (wiring[i] !== wiringScratch[i]) return false;
  return true;
}

/**
 * Works out what a chain of this shape composes to (once per shape): each input of each call is
 * the result of the last held call that wrote its buffer, or a fused input (a view already taken
 * is taken once); each output is stored by its last writer, unless the user destroyed it.
 */
function buildShape(calls: readonly CallPlan[], wiring: Int32Array, flags: number): ChainShape {
  chainShapeStats.built++;
  const inputs: number[] = [];
  const inputViews: OperandView[] = [];
  const steps: ComposedStep[] = [];
  const lastWriter = new Map<GPUBuffer, number>();
  let key = '';
  calls.forEach((plan, k) => {
    const stepInputs = plan.operands.slice(0, plan.nin).map((o, j): StepInput => {
      if (o.scalar === undefined) {
        const writer = lastWriter.get(bufferOf(o));
        if (writer !== undefined) return { kind: 'step', index: writer };
        const same = inputViews.findIndex((i) => i.scalar === undefined && sameView(i, o));
        if (same >= 0) return { kind: 'param', index: same };
      }
      inputs.push(k, j);
      inputViews.push(o);
      return { kind: 'param', index: inputViews.length - 1 };
    });
    steps.push({ kernel: plan.kernel, inputs: stepInputs });
    lastWriter.set(bufferOf(plan.operands[plan.nin]!), k);
    key += `${plan.kernelKey}(${stepInputs.map((s) => `${s.kind[0]}${s.index}`).join(',')});`;
  });
  const stores = calls.map((_, k) => k).filter((k) => lastWriter.get(bufferOf(calls[k]!.operands[calls[k]!.nin]!)) === k && !(flags & (1 << k)));
  key += `|${inputViews.map((i) => (i.scalar !== undefined ? `s${i.dtype}` : i.dtype)).join(',')}|${stores.join(',')}`;
  let kernel = composed.get(key);
  if (!kernel && stores.length > 0) {
    const params = inputViews.map((i, n): { name: string; dtype: DType } => ({ name: `in${n + 1}`, dtype: i.dtype }));
    try {
      kernel = composeStores(params, steps, stores, calls.map((c) => c.kernel.name).join(' > '));
    } catch {
      return { wiring, flags }; // not composable: the calls run one by one
    }
    wholeOutputs.add(kernel);
    if (composed.size >= MAX_COMPOSED) composed.clear();
    composed.set(key, kernel);
  }
  // The stores index element 0 of one-element core slices, in bounds by construction: the fused
  // kernel checks indices only where a call's own kernel did (lookup tables), so a chain of
  // kernels without checks has none, and its batches read no bounds-check records back.
  const boundsCheck = flags >>> 16 !== 0;
  return { wiring, flags, fused: { kernel: kernel!, kernelKey: `chain:${key}`, inputs, stores, boundsCheck, slot: {} } };
}

/** The same elements in the same order: same buffer, offset, dtype and loop strides. */
export function sameView(a: OperandView, b: OperandView): boolean {
  if (bufferOf(a) !== bufferOf(b) || a.offset !== b.offset || a.dtype !== b.dtype || a.loopStrides.length !== b.loopStrides.length) return false;
  for (let d = 0; d < a.loopStrides.length; d++) if (a.loopStrides[d] !== b.loopStrides[d]) return false;
  return true;
}
