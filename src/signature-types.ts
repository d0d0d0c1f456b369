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
import type { AsyncUfunc, UfuncResult } from './callable.js';
import type { CallOptions } from './ufunc.js';
import type { AxisOptions, ReduceOptions, UfuncMethods } from './methods/types.js';
import type { DType, TypedArrayOf } from './dtypes.js';
import type { CoreSlice, Slice2 } from './kernel-types.js';
import type { NDArray, NDArrayLike } from './ndarray.js';
import type { DeviceArray } from './targets/gpu/runtime/device-array.js';
import type { ShardedArray } from './targets/gpu/runtime/sharded-array.js';
import type { DeviceTargetName, TargetName } from './targets/registry.js';

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
  ? R extends 1 ? CoreSlice<ScalarOf<D>> : R extends 2 ? Slice2<ScalarOf<D>> : unknown
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
  : X extends { readonly kind: 'device'; readonly dtype: infer D } ? D
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
 * Whether a call on plain typed arrays has a loop dimension: 1 when some typed array goes to an
 * input without core dimensions (its elements are the loop), else 0 (typed arrays are 1-D; scalars
 * add no dimension).
 */
type LoopRank<In extends readonly unknown[], InRanks extends readonly number[]> = 1 extends {
  [K in keyof In]: K extends keyof InRanks ? (In[K] extends number | bigint | boolean ? 0 : InRanks[K] extends 0 ? 1 : 0) : 0;
}[number]
  ? 1
  : 0;

/**
 * A call's result by what the inputs were, as the runtime decides it (call-finish.ts): a
 * `ShardedArray` where an input is sharded across devices; a `DeviceArray` where an input lives on
 * the gpu; a scalar where every input is one and the result
 * is 0-D; a typed array where the result is 1-D and every array input is a plain typed array; an
 * `NDArray` otherwise (an ndarray-like input, `axes`/`axis`, a 0-D or 2-D or higher result). `OutRank`
 * is the output's number of core dimensions; where the layout is not a literal (`number`), results
 * that depend on it are a union.
 */
type ResultFor<In extends readonly unknown[], D, InRanks extends readonly number[], OutRank extends number, NDResult extends boolean> = [Extract<In[number], ShardedArray>] extends [never]
  ? DeviceResultFor<In, D, InRanks, OutRank, NDResult>
  : ShardedArray;
type DeviceResultFor<In extends readonly unknown[], D, InRanks extends readonly number[], OutRank extends number, NDResult extends boolean> = [Extract<In[number], DeviceArray>] extends [never]
  ? number extends OutRank
    ? In[number] extends number | bigint | boolean
      ? InRanks extends readonly 0[] ? ScalarOf<D> | HostResult<D, 0 | 1> : HostResult<D, 0 | 1>
      : [Extract<In[number], NDArrayLike>] extends [never] ? (NDResult extends true ? HostResult<D, 0> : HostResult<D, 0 | 1>) : HostResult<D, 0>
    : In[number] extends number | bigint | boolean
      ? OutRank extends 0 ? ScalarOf<D> : NDResult extends true ? HostResult<D, 0> : HostResult<D, OutRank>
      : [Extract<In[number], NDArrayLike>] extends [never]
        ? NDResult extends true ? HostResult<D, 0> : HostResult<D, Sum<LoopRank<In, InRanks>, OutRank>>
        : HostResult<D, 0>
  : DeviceArray<D & DType>;

/** A host result of this rank: a typed array when 1-D, else an NDArray (a union for a union of ranks). */
type HostResult<D, Rank> = (1 extends Rank ? TypedArrayOf[D & DType] : never) | (Exclude<Rank, 1> extends never ? never : NDArray<TypedArrayOf[D & DType]>);

/** A small sum (ranks of loop plus core dimensions): 0 or 1 plus 0, 1, 2 or more. */
type Sum<A extends number, B extends number> = A extends 0 ? B : B extends 0 ? 1 : 2;

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
 * `O` with every key that `Shape` does not have typed `never`: an options object with a misspelt
 * key is a type error even beside valid keys (a generic parameter gets no excess property check).
 * A record type (`Record<string, unknown>`) has no keys to check and is left to the run-time check.
 *
 * @example
 * declare function f<const O extends Options>(options?: Exact<O, Options>): void;
 * f({ target: 'gpu', fastmth: true }); // error: `fastmth` is never
 */
export type Exact<O, Shape> = string extends keyof O ? O : O & { [K in Exclude<keyof O, keyof Shape>]: never };

/**
 * What the arguments must also be so that a trailing options object has no unknown key: the
 * same tuple with `never` for each unknown key of the options, or `unknown` (no constraint) where
 * there is no options object or no unknown key. (Not the options intersected with that: an
 * intersection escapes TypeScript's check that an object shares a key with an all-optional type,
 * and an output passed where the options go would then compile.)
 */
type ExactOptions<In extends readonly unknown[]> = In extends readonly [...infer Head, infer Last]
  ? [Last] extends [never]
    ? unknown
    : Last extends UfuncInput | OutputArray
    ? unknown
    : [Exclude<keyof Last, keyof TypedCallOptions<unknown>>] extends [never] ? unknown : readonly [...Head, { [K in Exclude<keyof Last, keyof TypedCallOptions<unknown>>]: never }]
  : unknown;

/**
 * A ufunc's call for literal signatures. `P` is the parsed signatures as `{ out, args }` (the
 * output dtype and the inputs' types); `Shape` the core dimensions of the layout.
 */
export interface TypedCall<P, Shape extends CoreRanks> {
  <const In extends CallArguments<Shape['nin'], Shape['nout']>>(...args: In & ExactOptions<In>): Promise<CallResult<In, P, Shape>>;
}

/** The same call done before returning (`f.sync`, cpu and parallel): never a device array. */
export interface TypedSyncCall<P, Shape extends CoreRanks> {
  <const In extends CallArguments<Shape['nin'], Shape['nout']>>(...args: In & ExactOptions<In>): Exclude<CallResult<In, P, Shape>, DeviceArray | ShardedArray>;
}

/** The first `N` elements of a tuple, and the rest. */
type SplitAt<T extends readonly unknown[], N extends number, Head extends unknown[] = []> = Head['length'] extends N
  ? { head: Head; rest: T }
  : T extends readonly [infer First, ...infer Rest] ? SplitAt<Rest, N, [...Head, First]> : { head: Head; rest: [] };

/** The result of a call with these arguments: the outputs it passed, or what its inputs make. */
type CallResult<In extends readonly unknown[], P, Shape extends CoreRanks> = SplitAt<In, Shape['nin']> extends {
  head: infer I extends unknown[];
  rest: infer Rest;
}
  ? Rest extends readonly [infer Out extends OutputArray, ...unknown[]]
    ? Shape['nout'] extends 1 ? Out : SplitAt<Rest & readonly unknown[], Shape['nout']>['head']
    : Rest extends readonly [infer O extends object]
      ? O extends { readonly out: infer Given } ? ([Given] extends [undefined] ? Results<I, OutputDType<P, I>, Shape, AxesGiven<O>> : Given) : Results<I, OutputDType<P, I>, Shape, AxesGiven<O>>
      : Results<I, OutputDType<P, I>, Shape, false>
  : never;

/** Whether the options choose the core axes (`axes`, `axis`): the results are then NDArrays. */
type AxesGiven<O> = O extends { readonly axes: object } | { readonly axis: number } ? true : false;

/** The result of each output: one, or a tuple of one per output. */
type Results<I extends readonly unknown[], D, Shape extends CoreRanks, NDResult extends boolean> = Shape['nout'] extends 1
  ? ResultFor<I, D, Shape['inputs'], Shape['outputs'][0] & number, NDResult>
  : number extends Shape['nout']
    ? ResultFor<I, D, Shape['inputs'], number, NDResult>[]
    : EachOutput<I, D, Shape['inputs'], Shape['outputs'], NDResult>;

/** One result per output (a homomorphic map over the outputs' core ranks, so a tuple stays one). */
type EachOutput<I extends readonly unknown[], D, InRanks extends readonly number[], OutRanks extends readonly number[], NDResult extends boolean> = {
  -readonly [K in keyof OutRanks]: ResultFor<I, D, InRanks, OutRanks[K] & number, NDResult>;
};

/** The core dimensions of a layout: how many each input and output has, and their counts. */
export interface CoreRanks {
  readonly inputs: readonly number[];
  readonly outputs: readonly number[];
  readonly nin: number;
  readonly nout: number;
}

/** The number of core dimensions of each group of a layout side: `(m,n),()` → [2, 0]. */
type GroupRanks<S extends string, Acc extends number[] = []> = S extends `${string}(${infer Inside})${infer Rest}`
  ? GroupRanks<Rest, [...Acc, Trim<Inside> extends '' ? 0 : Rank<Inside>]>
  : Acc;

/** The core ranks of a layout literal such as `(m,n),(n,p)->(m,p)`; unknown (`number`) for a `string`. */
export type LayoutRanks<L extends string> = string extends L
  ? { inputs: number[]; outputs: number[]; nin: number; nout: number }
  : L extends `${infer In}->${infer Out}`
    ? { inputs: GroupRanks<In>; outputs: GroupRanks<Out>; nin: GroupRanks<In>['length']; nout: GroupRanks<Out>['length'] }
    : { inputs: number[]; outputs: number[]; nin: number; nout: number };

/** vectorize's layout: `Nin` scalar inputs, one scalar output. */
type ScalarRanks<Nin extends number> = { inputs: Inputs0<Nin>; outputs: [0]; nin: Nin; nout: 1 };
type Inputs0<N extends number, Acc extends 0[] = []> = number extends N ? 0[] : Acc['length'] extends N ? Acc : Inputs0<N, [...Acc, 0]>;

/** The ufunc's own properties (those of every `Ufunc`), with the target it was made for. */
export type UfuncProperties<T extends TargetName> = Omit<Pick<AsyncUfunc, keyof AsyncUfunc>, 'target'> & { readonly target: T };

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

/** A method's result dtype: the call's for two inputs like `x`, or the `dtype` option's. */
type MethodDType<P, X, O> = O extends { readonly dtype: infer D extends DType } ? D : OutputDType<P, [X, X]>;

/** `reduce`'s result: a scalar for a typed array (1-D, one axis folded), a scalar or an NDArray for an ndarray-like, device arrays stay on the device. */
type ReduceResult<X, D, O> = X extends ShardedArray
  ? UfuncResult
  : X extends DeviceArray
  ? DeviceArray<D & DType>
  : O extends { readonly out: infer Given extends object } ? Given
  : O extends { readonly keepdims: true } ? NDArray<TypedArrayOf[D & DType]>
  : X extends { readonly data: unknown } ? ScalarOf<D> | NDArray<TypedArrayOf[D & DType]> : ScalarOf<D>;

/** `accumulate`'s and `reduceat`'s result: the input's kind (a typed array for a typed array). */
type SameKindResult<X, D, O> = X extends ShardedArray
  ? UfuncResult
  : X extends DeviceArray
  ? DeviceArray<D & DType>
  : O extends { readonly out: infer Given extends object } ? Given
  : X extends { readonly data: unknown } ? NDArray<TypedArrayOf[D & DType]> : TypedArrayOf[D & DType];

/** An array a method takes: a host array (typed, ndarray-like) or a device array (results of sharded arrays are not typed yet). */
type MethodArray = HostArray | DeviceArray | ShardedArray;

/**
 * The ufunc methods of a binary ufunc typed from literal signatures: results typed by the input's
 * kind and the loop its dtype picks (methods.ts has the semantics).
 */
export interface TypedMethods<P> {
  /** Folds `x` along axes: `f(…f(f(x₀, x₁), x₂)…)`. @example await add.reduce(xs) // sum, a number */
  reduce<X extends MethodArray, const O extends ReduceOptions = {}>(x: X, options?: Exact<O, ReduceOptions>): Promise<ReduceResult<X, MethodDType<P, X, O>, O>>;
  /** The running fold, same shape as `x`. @example await add.accumulate(xs) // prefix sums */
  accumulate<X extends MethodArray, const O extends AxisOptions = {}>(x: X, options?: Exact<O, AxisOptions>): Promise<SameKindResult<X, MethodDType<P, X, O>, O>>;
  /** `f(a[i…], b[j…])` for every pair: shape `[...a.shape, ...b.shape]`. */
  outer<A extends MethodArray, B extends MethodArray>(a: A, b: B, options?: { readonly out?: unknown }): Promise<[Extract<A | B, ShardedArray>] extends [never] ? ([Extract<A | B, DeviceArray>] extends [never] ? NDArray<TypedArrayOf[OutputDType<P, [A, B]> & DType]> : DeviceArray<OutputDType<P, [A, B]> & DType>) : UfuncResult>;
  /** Folds the slices `x[indices[i]:indices[i+1]]` along an axis, as NumPy's `reduceat`. */
  reduceat<X extends MethodArray, const O extends AxisOptions = {}>(x: X, indices: ArrayLike<number>, options?: Exact<O, AxisOptions>): Promise<SameKindResult<X, MethodDType<P, X, O>, O>>;
  /** In place and unbuffered: `a[indices[k]] = f(a[indices[k]], b[k])` for k in order (NumPy's `ufunc.at`). */
  at: UfuncMethods['at'];
}

/** `f.sync`, on the targets that can block (cpu, parallel); a gpu ufunc has none. */
// Not distributed over a union: a ufunc whose target is chosen at run time keeps `sync`, which
// throws on a device target.
type SyncOf<T extends TargetName, P, Shape extends CoreRanks> = [T] extends [DeviceTargetName] ? unknown : { sync: TypedSyncCall<P, Shape> };

/** A vectorize ufunc typed from literal signatures, with its methods (they throw for a ufunc that is not binary). */
export type TypedVectorize<Sigs extends readonly string[], T extends TargetName> = TypedCall<VectorizeShape<Sigs>, ScalarRanks<KernelArity<Sigs>>> &
  SyncOf<T, VectorizeShape<Sigs>, ScalarRanks<KernelArity<Sigs>>> &
  UfuncProperties<T> &
  TypedMethods<VectorizeShape<Sigs>>;

/**
 * A guvectorize ufunc typed from literal signatures and layout; one over two scalars to one
 * (`(),()->()`) has the ufunc methods, typed, and the others have none (`undefined` members).
 */
export type TypedGuvectorize<Sigs extends readonly string[], L extends string, T extends TargetName> = TypedCall<GuvectorizeShape<Sigs>, LayoutRanks<L>> &
  SyncOf<T, GuvectorizeShape<Sigs>, LayoutRanks<L>> &
  UfuncProperties<T> &
  (LayoutRanks<L> extends { inputs: [0, 0]; outputs: [0] } ? TypedMethods<GuvectorizeShape<Sigs>> : Partial<UfuncMethods>);
