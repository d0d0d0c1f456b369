/**
 * Types from signatures: with a literal signature such as `'float32(float32, float32)'` or
 * `'void(float32[:], float32[:])'`, TypeScript reads the text (Numba's names and aliases, as the
 * runtime parser does) and gives the kernel its parameter types and each call its argument and
 * result types. Signatures that are not literals (a `string[]` variable) fall back to the loose
 * `Ufunc` type. Nothing here exists at run time.
 *
 * @example
 * const f = vectorize(['float32(float32, float32)'])((a, b) => a * b); // a, b: number
 * const z = await f(xs, ys); // Float32Array when xs, ys are typed arrays
 */
import type { Ufunc } from './callable.js';
import type { CallOptions } from './ufunc.js';
import type { DType } from './dtypes.js';
import type { Slice, Slice2 } from './kernel-types.js';
import type { NDArray, NDArrayLike } from './ndarray.js';
import type { TypedArrayOf } from './shared-memory.js';
import type { DeviceArray } from './targets/gpu/runtime/device-array.js';
import type { ShardedArray } from './targets/gpu/runtime/sharded-array.js';
import type { TargetName } from './targets/registry.js';

/** Numba's other names for the dtypes (the runtime's table is in signature-parser/types.ts). */
interface DTypeAliases {
  b1: 'bool'; boolean: 'bool'; bool_: 'bool';
  i1: 'int8'; i2: 'int16'; i4: 'int32'; i8: 'int64'; intc: 'int32'; intp: 'int64'; int_: 'int64';
  u1: 'uint8'; u2: 'uint16'; u4: 'uint32'; u8: 'uint64'; uintc: 'uint32'; uintp: 'uint64';
  uint8_clamped: 'uint8c';
  f4: 'float32'; f8: 'float64'; single: 'float32'; double: 'float64'; float_: 'float64';
}

type Whitespace = ' ' | '\n' | '\t' | '\r';
type Trim<S extends string> = S extends `${Whitespace}${infer R}` ? Trim<R> : S extends `${infer R}${Whitespace}` ? Trim<R> : S;

/** The dtype a type name stands for, or never. */
type DTypeNamed<N extends string> = N extends DType ? N : N extends keyof DTypeAliases ? DTypeAliases[N] : never;

/** Counts the `:` of an array suffix: `[:]` → 1, `[:, :]` → 2 (`[::1]` is one contiguous dimension). */
type Rank<Inside extends string, Acc extends unknown[] = [unknown]> = Inside extends `${string},${infer Rest}` ? Rank<Rest, [...Acc, unknown]> : Acc['length'];

/** One argument of a signature, as the type checker sees it. */
export type ArgOf<A extends string> = Trim<A> extends `${infer Name}[${infer Inside}]`
  ? { kind: 'array'; dtype: DTypeNamed<Trim<Name>>; rank: Rank<Inside> }
  : { kind: 'scalar'; dtype: DTypeNamed<Trim<A>> };

/** Splits `a, b[:, :], c` at the commas outside brackets. */
type SplitArgs<S extends string, Current extends string = '', Depth extends unknown[] = [], Out extends string[] = []> = S extends `${infer C}${infer Rest}`
  ? C extends '['
    ? SplitArgs<Rest, `${Current}${C}`, [...Depth, unknown], Out>
    : C extends ']'
      ? SplitArgs<Rest, `${Current}${C}`, Depth extends [unknown, ...infer D] ? D : [], Out>
      : C extends ','
        ? Depth extends []
          ? SplitArgs<Rest, '', Depth, [...Out, Current]>
          : SplitArgs<Rest, `${Current}${C}`, Depth, Out>
        : SplitArgs<Rest, `${Current}${C}`, Depth, Out>
  : Trim<Current> extends ''
    ? Out
    : [...Out, Current];

type MapArgs<T extends string[]> = { [K in keyof T]: ArgOf<T[K]> };

/** A signature read by the type checker: `{ ret, args }`, or never where the text is not one. */
export type ParsedSignature<S extends string> = Trim<S> extends `${infer Ret}(${infer Args})`
  ? { ret: Trim<Ret> extends 'void' ? 'void' : DTypeNamed<Trim<Ret>>; args: MapArgs<SplitArgs<Args>> }
  : never;

/** A kernel's scalar of each dtype: 64-bit integers are bigints, bool is boolean. */
export type ScalarOf<D> = D extends 'int64' | 'uint64' ? bigint : D extends 'bool' ? boolean : number;

/** What a kernel parameter is, by argument: a scalar, or a core slice of its rank. */
type KernelParam<A> = A extends { kind: 'array'; dtype: infer D; rank: infer R }
  ? R extends 1 ? Slice<ScalarOf<D>> : R extends 2 ? Slice2<ScalarOf<D>> : unknown
  : A extends { dtype: infer D }
    ? ScalarOf<D>
    : never;

type KernelParams<Args> = { [K in keyof Args]: KernelParam<Args[K]> };

/** Whether `S` is a literal (not `string`). */
type IsLiteral<S extends string> = string extends S ? false : true;

/** Whether every signature of a tuple is a literal the type checker can read. */
export type AllParsed<Sigs extends readonly string[]> = Sigs extends readonly []
  ? false
  : { [K in keyof Sigs]: IsLiteral<Sigs[K]> extends true ? ([ParsedSignature<Sigs[K]>] extends [never] ? false : true) : false }[number] extends true
    ? true
    : false;

type Parsed<Sigs extends readonly string[]> = { [K in keyof Sigs]: ParsedSignature<Sigs[K]> }[number];

/** The kernel vectorize expects for these signatures: scalars in, a scalar out. */
export type VectorizeKernel<Sigs extends readonly string[]> = Parsed<Sigs> extends infer P
  ? P extends { ret: infer R; args: infer A extends unknown[] }
    ? (...args: KernelParams<A>) => ScalarOf<R>
    : never
  : never;

/** The kernel guvectorize expects: scalars and core slices, outputs written in place. */
export type GuvectorizeKernel<Sigs extends readonly string[]> = Parsed<Sigs> extends infer P
  ? P extends { args: infer A extends unknown[] }
    ? (...args: KernelParams<A>) => void
    : never
  : never;

/**
 * A kernel for a union of signatures: TypeScript gives a union of function types no contextual
 * parameter types, so the parameters are merged position by position.
 */
export type MergedKernel<F> = [F] extends [(...args: infer A) => infer R] ? (...args: A) => R : never;

/** An array argument on the host: a typed array, or an ndarray-like view. */
type HostArray = TypedArrayOf[DType] | NDArrayLike;

/** Any one input a call may take: a scalar (number, bigint, boolean), a host array, a device array (sharded or not). */
export type UfuncInput = number | bigint | boolean | HostArray | DeviceArray | ShardedArray;

/** The inputs of a call: one per input of the layout. */
type Inputs<N extends number, Acc extends UfuncInput[] = []> = Acc['length'] extends N ? Acc : Inputs<N, [...Acc, UfuncInput]>;

/** Typed call options: `out` is an array (several outputs: one each). */
export interface TypedCallOptions<Out> extends CallOptions {
  readonly out?: Out;
}

/** The dtype an input array holds, `'any'` for scalars (they cast to any signature). */
type InputDType<X> = X extends number | bigint | boolean
  ? 'any'
  : X extends { readonly data: infer T } ? InputDType<T>
  : X extends Float32Array ? 'float32' : X extends Float64Array ? 'float64'
  : X extends Int8Array ? 'int8' : X extends Int16Array ? 'int16' : X extends Int32Array ? 'int32' : X extends BigInt64Array ? 'int64'
  : X extends Uint8ClampedArray ? 'uint8c' : X extends Uint8Array ? 'uint8' : X extends Uint16Array ? 'uint16' : X extends Uint32Array ? 'uint32' : X extends BigUint64Array ? 'uint64'
  : 'any';

/** Whether the inputs' dtypes are exactly a signature's (as the runtime tries signatures in order). */
type Matches<Args, In extends readonly unknown[]> = {
  [K in keyof In]: K extends keyof Args ? (InputDType<In[K]> extends 'any' ? true : Args[K] extends { dtype: InputDType<In[K]> } ? true : false) : true;
}[number] extends true ? true : false;

/**
 * The output dtype of a call: that of the signatures the inputs match exactly, else (inputs that
 * the runtime casts safely, e.g. an Int16Array to float32) any of them.
 */
type OutputDType<P, In extends readonly unknown[]> = [MatchingOutput<P, In>] extends [never] ? (P extends { out: infer D } ? D : never) : MatchingOutput<P, In>;
type MatchingOutput<P, In extends readonly unknown[]> = P extends { out: infer D; args: infer A } ? (Matches<A, In> extends true ? D : never) : never;

/**
 * A call's result by what the inputs were, as the runtime decides it: a `ShardedArray` where an
 * input is sharded across devices, a `DeviceArray` where an input lives on the gpu, a scalar where every input is one (vectorize), a typed array where every
 * array input is a plain typed array, an `NDArray` where one is an ndarray-like view.
 */
type ResultFor<In extends readonly unknown[], D, Vectorize extends boolean> = [Extract<In[number], ShardedArray>] extends [never]
  ? DeviceResultFor<In, D, Vectorize>
  : ShardedArray;
type DeviceResultFor<In extends readonly unknown[], D, Vectorize extends boolean> = [Extract<In[number], DeviceArray>] extends [never]
  ? In[number] extends number | bigint | boolean
    ? Vectorize extends true ? ScalarOf<D> : TypedArrayOf[D & DType] | NDArray<TypedArrayOf[D & DType]>
    : [Extract<In[number], NDArrayLike>] extends [never]
      ? Vectorize extends true ? TypedArrayOf[D & DType] : TypedArrayOf[D & DType] | NDArray<TypedArrayOf[D & DType]>
      : NDArray<TypedArrayOf[D & DType]>
  : DeviceArray;

/** Outputs passed positionally after the inputs (as NumPy's `f(a, b, out)`). */
type Outputs<N extends number, Acc extends OutputArray[] = []> = Acc['length'] extends N ? Acc : Outputs<N, [...Acc, OutputArray]>;
type OutputArray = HostArray | DeviceArray | ShardedArray;

/** The arguments a call takes: its inputs, then optionally its outputs, then optionally options. */
export type CallArguments<Nin extends number, Nout extends number> =
  | Inputs<Nin>
  | [...Inputs<Nin>, TypedCallOptions<unknown>]
  | [...Inputs<Nin>, ...Outputs<Nout>]
  | [...Inputs<Nin>, ...Outputs<Nout>, TypedCallOptions<never>];

/**
 * A ufunc's call for literal signatures. `P` is the parsed signatures as `{ out, args }` (the
 * output dtype and the inputs' types); `Vectorize` says whether all-scalar calls give a scalar.
 */
export interface TypedCall<P, Nin extends number, Nout extends number, Vectorize extends boolean> {
  <const In extends CallArguments<Nin, Nout>>(...args: In): Promise<CallResult<In, P, Nin, Nout, Vectorize>>;
}

/** The same call done before returning (`f.sync`, cpu and parallel): never a device array. */
export interface TypedSyncCall<P, Nin extends number, Nout extends number, Vectorize extends boolean> {
  <const In extends CallArguments<Nin, Nout>>(...args: In): Exclude<CallResult<In, P, Nin, Nout, Vectorize>, DeviceArray | ShardedArray>;
}

/** The first `N` elements of a tuple, and the rest. */
type SplitAt<T extends readonly unknown[], N extends number, Head extends unknown[] = []> = Head['length'] extends N
  ? { head: Head; rest: T }
  : T extends readonly [infer First, ...infer Rest] ? SplitAt<Rest, N, [...Head, First]> : { head: Head; rest: [] };

/** The result of a call with these arguments: the outputs it passed, or what its inputs make. */
type CallResult<In extends readonly unknown[], P, Nin extends number, Nout extends number, Vectorize extends boolean> = SplitAt<In, Nin> extends {
  head: infer I extends unknown[];
  rest: infer Rest;
}
  ? Rest extends readonly [infer Out extends OutputArray, ...unknown[]]
    ? Nout extends 1 ? Out : SplitAt<Rest & readonly unknown[], Nout>['head']
    : Rest extends readonly [{ readonly out: infer O }]
      ? [O] extends [undefined] ? Results<ResultFor<I, OutputDType<P, I>, Vectorize>, Nout> : O
      : Results<ResultFor<I, OutputDType<P, I>, Vectorize>, Nout>
  : never;

type Results<R, N extends number> = N extends 1 ? R : Inputs<N> extends infer T ? { [K in keyof T]: R } : never;

/** The ufunc's own properties (those of every `Ufunc`), with the target it was made for. */
export type UfuncProperties<T extends TargetName> = Omit<Pick<Ufunc, keyof Ufunc>, 'sync' | 'target'> & { readonly target: T };

/** Counts the groups of a layout side: `(m,n),(n,p)` → 2, `()` → 1. */
type GroupCount<S extends string, Acc extends unknown[] = []> = S extends `${string}(${infer Rest}` ? GroupCount<Rest, [...Acc, unknown]> : Acc['length'];

/** Inputs and outputs of a layout literal such as `(m,n),(n,p)->(m,p)`. */
export type LayoutCounts<L extends string> = L extends `${infer In}->${infer Out}` ? { nin: GroupCount<In>; nout: GroupCount<Out> } : { nin: number; nout: number };

/** The target named by options, or 'cpu'. */
export type TargetOf<O> = O extends { readonly target: infer T extends TargetName } ? T : 'cpu';

/** vectorize's signatures as `{ out, args }`: the return type is the output. */
type VectorizeShape<Sigs extends readonly string[]> = Parsed<Sigs> extends infer P ? (P extends { ret: infer R; args: infer A } ? { out: R; args: A } : never) : never;

/** guvectorize's signatures as `{ out, args }`: outputs are the last arguments (their dtype: the last one's). */
type GuvectorizeShape<Sigs extends readonly string[]> = Parsed<Sigs> extends infer P
  ? P extends { args: infer A extends unknown[] } ? (A extends [...unknown[], { dtype: infer D }] ? { out: D; args: A } : never) : never
  : never;

/** The number of parameters of the kernel (all signatures have as many). */
type KernelArity<Sigs extends readonly string[]> = Parsed<Sigs> extends { args: infer A extends unknown[] } ? A['length'] : number;

/** A vectorize ufunc typed from literal signatures; its methods stay as on `VectorizeUfunc`. */
export type TypedVectorize<Sigs extends readonly string[], T extends TargetName, Methods> = TypedCall<VectorizeShape<Sigs>, KernelArity<Sigs>, 1, true> & {
  sync: TypedSyncCall<VectorizeShape<Sigs>, KernelArity<Sigs>, 1, true>;
} & UfuncProperties<T> & Methods;

/** A guvectorize ufunc typed from literal signatures and layout. */
export type TypedGuvectorize<Sigs extends readonly string[], L extends string, T extends TargetName> = TypedCall<
  GuvectorizeShape<Sigs>,
  LayoutCounts<L>['nin'],
  LayoutCounts<L>['nout'],
  false
> & {
  sync: TypedSyncCall<GuvectorizeShape<Sigs>, LayoutCounts<L>['nin'], LayoutCounts<L>['nout'], false>;
} & UfuncProperties<T>;
