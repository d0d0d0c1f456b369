/**
 * The WGSL of the gpu's tree reduction and scan (`reduce`/`accumulate` of an associative kernel,
 * tree-fold.ts runs it). One module per kernel, dtype and device kind (subgroups or not), with two
 * entry points:
 *
 * - `reduce_main`: one workgroup folds a *run* of consecutive blocks of a row. A block is
 *   {@link BLOCK} (1,024) consecutive elements, 4 per invocation: invocation p folds elements
 *   4p … 4p + 3 as `f(f(e₀, e₁), f(e₂, e₃))`, and the 256 invocation values combine as a balanced
 *   binary tree, left before right (`v[p] = f(v[p], v[p + d])` for d = 1, 2, 4, …, 128, p a multiple
 *   of 2d) — so a block folds as one balanced binary tree of its elements. With subgroups the levels
 *   below the subgroup size S are shuffles (`subgroupShuffleDown`), the others go through workgroup
 *   memory; the tree is the same for every S. Blocks of a run fold left to right; {@link UNROLL}
 *   blocks are loaded at once (their trees run side by side as the components of a vec4), so that
 *   enough loads are in flight to run at memory speed. 32-bit operands read with unit stride from
 *   4-element-aligned rows are loaded 16 bytes at a time.
 * - `scan_main`: one workgroup scans a run, block by block: invocation p scans its 4 elements left
 *   to right (sᵢ = f(sᵢ₋₁, eᵢ)); the invocation totals scan within each subgroup as a Hillis–Steele
 *   tree (`t[q] = f(t[q − d], t[q])`, earlier first); the subgroup totals fold left to right; element
 *   i of invocation p is then `f(carry, f(f(before, within), sᵢ))` — `before` the fold of the
 *   subgroups before p's, `within` the scan of the invocations before p in its subgroup, `carry` the
 *   fold of every block before this one (the run's first block starts from the scanned totals of
 *   the runs before it). Without subgroups the whole workgroup is one "subgroup" of 256 scanned in
 *   workgroup memory. The grouping therefore depends on S (32 on NVIDIA, 8 on lavapipe): the values
 *   of a float scan differ between devices by rounding only.
 *
 * Only associativity is used, never commutativity; elements absent from a fold (past the end of a
 * row, or where a `where` mask is false) are left out of it rather than replaced by an identity.
 *
 * Operands are bound as words: 32-bit dtypes one element a word, 8- and 16-bit ones packed as the
 * host stores them (their results are merged into their words with atomics); partial results
 * between passes are words of the value type (pairs of words, value and presence, where a mask may
 * leave a run empty).
 */
import type { TypedKernel } from '../../../compiler/ir.js';
import type { DType } from '../../../dtypes.js';
import { repOfType } from './emit-wgsl.js';
import { generateKernelFunction } from './shader-module.js';

/** Invocations per workgroup. */
export const W = 256;
/** Elements each invocation folds per block. */
export const PER_LANE = 4;
/** Elements of a block (folded as one balanced binary tree). */
export const BLOCK = W * PER_LANE;
/** Blocks a reduce workgroup loads at once. */
export const UNROLL = 4;
/** Params words before the per-dimension ones. */
export const FIXED = 16;

/** Params flags (word 9). */
export const FLAG = {
  /** Fold `initial` (word 10) in on the left of the result. */
  INITIAL: 1,
  /** Leave out the elements whose `where` byte (mask binding) is 0. */
  MASK: 2,
  /** The input holds (value, presence) word pairs: partials of a masked fold. */
  PAIRS_IN: 4,
  /** Write (value, presence) word pairs. */
  PAIRS_OUT: 8,
  /** The input holds value words (partials), not the dtype's packing. */
  WORDS_IN: 16,
  /** Write value words. */
  WORDS_OUT: 32,
  /** The input is 32-bit with unit stride and every row starts at a multiple of 4 elements: vec4 loads. */
  VEC: 64,
  /** Scan: run g > 0 of row r starts from word r·runs + g − 1 of the carry binding. */
  CARRY: 128,
} as const;

/** How the dtype's elements are stored in a word. */
function packing(dtype: DType): { bits: 8 | 16 | 32; signed: boolean } {
  switch (dtype) {
    case 'int8': return { bits: 8, signed: true };
    case 'uint8': case 'uint8c': case 'bool': return { bits: 8, signed: false };
    case 'int16': return { bits: 16, signed: true };
    case 'uint16': return { bits: 16, signed: false };
    default: return { bits: 32, signed: dtype === 'int32' };
  }
}

/** The value type the tree carries (shuffles and workgroup memory take no bool). */
function valueType(dtype: DType): 'f32' | 'i32' | 'u32' {
  if (dtype === 'float32') return 'f32';
  if (dtype === 'uint32' || dtype === 'bool') return 'u32';
  return 'i32';
}

/** The dtypes a tree fold runs (the gpu's dtypes: no 64-bit ones). */
export const TREE_DTYPES: readonly DType[] = ['float32', 'int32', 'uint32', 'int16', 'uint16', 'int8', 'uint8', 'uint8c', 'bool'];

/** The names the hand-written part of the shader uses (kept out of the kernel's names). */
const RESERVED = [
  'params', 'x_words', 'x_vec', 'out_words', 'carry_words', 'mask_words', 'stage', 'sg_counter', 'P4', 'Item', 'VT',
  'fold', 'fa', 'fb', 'fr', 'comb', 'narrow', 'load_elem', 'load_item', 'leaf', 'store_result', 'row_offset', 'mask_at',
  'reduce_main', 'scan_main', 'scan_lanes_full', 'tree_full4', 'tree_full1', 'tree_item1', 'fold4', 'leaf_full', 'scan_lanes', 'W', 'BLOCK', 'UNROLL', 'FIXED', 'PARTS',
];

/**
 * `fold(a, b)`: the kernel on two values, its result narrowed to the dtype. A guvectorize kernel
 * (layout `(),()->()`) takes one-element arrays and writes its result into the third.
 */
function foldFunction(kernel: TypedKernel, name: string, toKernel: (v: string) => string, fromKernel: (v: string) => string): string {
  if (kernel.returnType !== 'void') {
    return `fn fold(a: VT, b: VT) -> VT {
  return narrow(${fromKernel(`${name}(${toKernel('a')}, ${toKernel('b')})`)});
}`;
  }
  const rep = repOfType((kernel.params[0]!.type as { dtype: DType }).dtype);
  return `fn fold(a: VT, b: VT) -> VT {
  var fa = array<${rep}, 1>(${toKernel('a')});
  var fb = array<${rep}, 1>(${toKernel('b')});
  var fr: array<${rep}, 1>;
  ${name}(&fa, &fb, &fr);
  return narrow(${fromKernel('fr[0]')});
}`;
}

/**
 * How the tree carries values of a dtype: the WGSL value type `VT`, `narrow`'s expression (the
 * kernel's result wrapped or clamped to the dtype), and conversions to and from the kernel's own
 * parameter types (bool for bool, i32 for the narrow integers, which are their rep; else VT).
 */
interface ValueFormat {
  readonly VT: 'f32' | 'i32' | 'u32';
  readonly narrow: string;
  readonly toKernel: (v: string) => string;
  readonly fromKernel: (v: string) => string;
}

function valueFormat(dtype: DType): ValueFormat {
  const isBool = dtype === 'bool';
  const narrow =
    dtype === 'int8' ? '(v << 24u) >> 24u'
    : dtype === 'int16' ? '(v << 16u) >> 16u'
    : dtype === 'uint8' ? 'v & 255'
    : dtype === 'uint16' ? 'v & 65535'
    : dtype === 'uint8c' ? 'clamp(v, 0, 255)'
    : 'v';
  return {
    VT: valueType(dtype),
    narrow,
    toKernel: (v) => (isBool ? `(${v} != 0u)` : v),
    fromKernel: (v) => (isBool ? `select(0u, 1u, ${v})` : v),
  };
}

/**
 * How the dtype's elements lie in the bound words: `load_elem`'s body (unpacking 8- and 16-bit
 * elements), the output binding's type (atomic words where results are merged into packed words),
 * a whole-word store, and `store_result`'s store of one element in the dtype's format.
 */
interface WordFormat {
  readonly loadElement: string;
  readonly outDecl: string;
  readonly storeWord: (index: string, value: string) => string;
  readonly storeElement: string;
}

function wordFormat(dtype: DType): WordFormat {
  const { bits, signed } = packing(dtype);
  const packed = bits !== 32;
  const isBool = dtype === 'bool';
  const perWord = 32 / bits;
  const loadElement = !packed
    ? `return bitcast<VT>(x_words[i]);`
    : `let w = x_words[i / ${perWord}u];
  let sh = (i % ${perWord}u) * ${bits}u;
  ${signed ? `return i32(w << (${32 - bits}u - sh)) >> ${32 - bits}u;` : isBool ? `return select(0u, 1u, ((w >> sh) & 255u) != 0u);` : `return i32((w >> sh) & ${2 ** bits - 1}u);`}`;
  const storeElement = !packed
    ? `out_words[i] = bitcast<u32>(v);`
    : `let sh = (i % ${perWord}u) * ${bits}u;
  atomicAnd(&out_words[i / ${perWord}u], ~(${2 ** bits - 1}u << sh));
  atomicOr(&out_words[i / ${perWord}u], (u32(v) & ${2 ** bits - 1}u) << sh);`;
  return {
    loadElement,
    outDecl: packed ? 'array<atomic<u32>>' : 'array<u32>',
    storeWord: (index, value) => (packed ? `atomicStore(&out_words[${index}], ${value})` : `out_words[${index}] = ${value}`),
    storeElement,
  };
}

/**
 * The WGSL of both entry points for kernel `f` over `dtype`: declarations, the fold and its
 * helpers, operand access, the block trees, `reduce_main`, the scans within a block, `scan_main`.
 */
export function foldShader(kernel: TypedKernel, dtype: DType, subgroups: boolean): string {
  const fn = generateKernelFunction(kernel, RESERVED);
  const values = valueFormat(dtype);
  const words = wordFormat(dtype);
  return declarations(kernel.name, dtype, subgroups, values.VT, words.outDecl)
    + foldFunctions(kernel, fn, values)
    + operandAccess(words)
    + reduceTree(subgroups, 'full4', 'tree_full4') + reduceTree(subgroups, 'full1', 'tree_full1') + reduceTree(subgroups, 'item1', 'tree_item1')
    + reduceMain(subgroups)
    + (subgroups ? scanLanesSubgroups() + scanLanesFullSubgroups() : scanLanesWorkgroup() + scanLanesFullWorkgroup())
    + scanMain(subgroups);
}

/** The header: constants, bindings, the workgroup memory of the trees and scans. */
function declarations(name: string, dtype: DType, subgroups: boolean, VT: string, outDecl: string): string {
  // Workgroup slots: two sets of subgroup results (WebGPU's subgroups have 4 to 128 invocations), or the lanes.
  const PARTS = subgroups ? W / 4 : W;
  return `// Generated by ufunc for the gpu target: tree reduction and scan of \`${name}\` over ${dtype}${subgroups ? ', with subgroups' : ''}.
${subgroups ? 'enable subgroups;\n' : ''}alias VT = ${VT};
const W = ${W}u;
const BLOCK = ${BLOCK}u;
const UNROLL = ${UNROLL}u;
const FIXED = ${FIXED}u;
const PARTS = ${PARTS}u;
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> x_words: array<u32>;
@group(0) @binding(2) var<storage, read_write> out_words: ${outDecl};
@group(0) @binding(3) var<storage, read> carry_words: array<u32>;
@group(0) @binding(4) var<storage, read> mask_words: array<u32>;
@group(0) @binding(5) var<storage, read> x_vec: array<vec4<u32>>;

struct P4 { v: vec4<VT>, h: vec4<u32> }
struct Item { v: VT, h: u32 }
var<workgroup> stage: array<P4, ${subgroups ? 2 * PARTS : PARTS}>;
var<workgroup> scan_stage: array<Item, ${subgroups ? 2 * (PARTS + 1) : PARTS}>;
${subgroups ? 'var<workgroup> sg_counter: atomic<u32>;\n' : ''}
`;
}

/** The kernel's function, `narrow`, `fold` (the kernel on two values), `comb` (fold leaving out absent sides) and `fold4`. */
function foldFunctions(kernel: TypedKernel, fn: { code: string; name: string }, { narrow, toKernel, fromKernel }: ValueFormat): string {
  return `${fn.code}
fn narrow(v: VT) -> VT {
  return ${narrow};
}

${foldFunction(kernel, fn.name, toKernel, fromKernel)}

// a then b, leaving out an absent side (h = 0).
fn comb(a: VT, ha: u32, b: VT, hb: u32) -> VT {
  if (ha != 0u && hb != 0u) { return fold(a, b); }
  if (hb != 0u) { return b; }
  return a;
}

fn fold4(a: vec4<VT>, b: vec4<VT>) -> vec4<VT> {
  return vec4<VT>(fold(a.x, b.x), fold(a.y, b.y), fold(a.z, b.z), fold(a.w, b.w));
}
`;
}

/** Reading elements of a row (`row_offset`, `load_elem`, `load_item`, the leaves) and storing results. */
function operandAccess({ loadElement, storeWord, storeElement }: WordFormat): string {
  return `
// Element offset of row r's first element: r decomposed over the row shape (C order), times the
// strides of operand \`which\` (0: x, 1: out, 2: mask). Strides are i32 bit patterns; u32 wrapping
// makes negative ones come out right.
fn row_offset(r: u32, which: u32) -> u32 {
  let rank = params[8];
  var rest = r;
  var off = 0u;
  for (var d = rank; d > 0u; d = d - 1u) {
    let len = params[FIXED + d - 1u];
    let i = rest % len;
    rest = rest / len;
    off = off + i * params[FIXED + (1u + which) * rank + d - 1u];
  }
  return off;
}

// Element i of the input (an index into the binding, in elements of its format).
fn load_elem(i: u32) -> VT {
  ${loadElement}
}

// Element e of the row whose first element is at xb (mask byte at mb), with its presence.
fn load_item(xb: u32, mb: u32, e: u32) -> Item {
  let flags = params[9];
  if (e >= params[1]) { return Item(VT(), 0u); }
  let i = xb + e * params[5];
  if ((flags & ${FLAG.PAIRS_IN}u) != 0u) { return Item(bitcast<VT>(x_words[2u * i]), x_words[2u * i + 1u]); }
  var h = 1u;
  if ((flags & ${FLAG.MASK}u) != 0u) {
    let m = mb + e * params[12];
    h = select(0u, 1u, ((mask_words[m / 4u] >> ((m % 4u) * 8u)) & 255u) != 0u);
  }
  if ((flags & ${FLAG.WORDS_IN}u) != 0u) { return Item(bitcast<VT>(x_words[i]), h); }
  return Item(load_elem(i), h);
}

// The balanced fold of elements e … e + 3 of a row (absent ones left out).
fn leaf(xb: u32, mb: u32, e: u32) -> Item {
  var a: Item;
  var b: Item;
  var c: Item;
  var d: Item;
  if ((params[9] & ${FLAG.VEC}u) != 0u && e + 3u < params[1]) {
    let w = x_vec[(xb + e) / 4u];
    a = Item(bitcast<VT>(w.x), 1u);
    b = Item(bitcast<VT>(w.y), 1u);
    c = Item(bitcast<VT>(w.z), 1u);
    d = Item(bitcast<VT>(w.w), 1u);
  } else {
    a = load_item(xb, mb, e);
    b = load_item(xb, mb, e + 1u);
    c = load_item(xb, mb, e + 2u);
    d = load_item(xb, mb, e + 3u);
  }
  let ab = Item(comb(a.v, a.h, b.v, b.h), a.h | b.h);
  let cd = Item(comb(c.v, c.h, d.v, d.h), c.h | d.h);
  return Item(comb(ab.v, ab.h, cd.v, cd.h), ab.h | cd.h);
}

// The balanced fold of elements e … e + 3 of a row, all present (the input in the dtype's format or words).
fn leaf_full(xb: u32, e: u32) -> VT {
  let flags = params[9];
  if ((flags & ${FLAG.VEC}u) != 0u) {
    let w = bitcast<vec4<VT>>(x_vec[(xb + e) / 4u]);
    return fold(fold(w.x, w.y), fold(w.z, w.w));
  }
  let s = params[5];
  let i = xb + e * s;
  if ((flags & ${FLAG.WORDS_IN}u) != 0u) {
    return fold(fold(bitcast<VT>(x_words[i]), bitcast<VT>(x_words[i + s])), fold(bitcast<VT>(x_words[i + 2u * s]), bitcast<VT>(x_words[i + 3u * s])));
  }
  return fold(fold(load_elem(i), load_elem(i + s)), fold(load_elem(i + 2u * s), load_elem(i + 3u * s)));
}

fn store_result(i: u32, v: VT, h: u32) {
  let flags = params[9];
  if ((flags & ${FLAG.PAIRS_OUT}u) != 0u) {
    ${storeWord('2u * i', 'bitcast<u32>(v)')};
    ${storeWord('2u * i + 1u', 'h')};
  } else if ((flags & ${FLAG.WORDS_OUT}u) != 0u) {
    ${storeWord('i', 'bitcast<u32>(v)')};
  } else {
    ${storeElement}
  }
}
`;
}

/** `reduce_main`: a workgroup folds a run of blocks of a row, UNROLL at a time where they are complete. */
function reduceMain(subgroups: boolean): string {
  return `
// params: 0 rows, 1 n, 2 runs per row, 3 blocks per run, 4 x offset, 5 x step, 6 out offset,
// 7 out step (between a row's run results), 8 row rank, 9 flags, 10 initial, 11 mask offset,
// 12 mask step; from FIXED: the row shape, then the x, out and mask strides of the row dimensions.
@compute @workgroup_size(${W})
fn reduce_main(@builtin(workgroup_id) group: vec3u, @builtin(num_workgroups) groups: vec3u, @builtin(local_invocation_index) lane: u32${subgroups ? ', @builtin(subgroup_invocation_id) sg_lane: u32, @builtin(subgroup_size) sg_size: u32' : ''}) {
  let id = group.y * groups.x + group.x;
  let runs = params[2];
  if (id >= params[0] * runs) { return; }
  ${subgroups ? `var sg_first = 0u;
  if (sg_lane == 0u) { sg_first = atomicAdd(&sg_counter, 1u); }
  let sg_index = subgroupBroadcastFirst(sg_first);
  // p: this invocation's place in the block (subgroups hold consecutive places, whatever the hardware's numbering).
  let p = sg_index * sg_size + sg_lane;` : 'let p = lane;'}
  let r = id / runs;
  let g = id % runs;
  let n = params[1];
  let blocks = (n + BLOCK - 1u) / BLOCK;
  let b0 = g * params[3];
  let b1 = min(b0 + params[3], blocks);
  let xb = params[4] + row_offset(r, 0u);
  let mb = params[11] + row_offset(r, 2u);
  var acc: VT;
  var has = 0u;
  var buf = 0u;
  // Blocks all of whose elements are present take a tree without presence, 4 at a time where
  // the run has them.
  let complete = (params[9] & ${FLAG.MASK | FLAG.PAIRS_IN}u) == 0u;
  for (var b = b0; b < b1; b = b + UNROLL) {
    let e = b * BLOCK + ${PER_LANE}u * p;
    if (complete && b + UNROLL <= b1 && (b + UNROLL) * BLOCK <= n) {
      let v = vec4<VT>(leaf_full(xb, e), leaf_full(xb, e + BLOCK), leaf_full(xb, e + 2u * BLOCK), leaf_full(xb, e + 3u * BLOCK));
      let t = tree_full4(v, p${subgroups ? ', sg_lane, sg_size, sg_index, buf' : ''});
      buf = buf ^ 1u;
      if (p == 0u) {
        var a = t.x;
        if (has != 0u) { a = fold(acc, t.x); }
        acc = fold(fold(fold(a, t.y), t.z), t.w);
        has = 1u;
      }
      continue;
    }
    for (var c = b; c < min(b + UNROLL, b1); c = c + 1u) {
      let ec = c * BLOCK + ${PER_LANE}u * p;
      var t: Item;
      if (complete && (c + 1u) * BLOCK <= n) {
        t = Item(tree_full1(leaf_full(xb, ec), p${subgroups ? ', sg_lane, sg_size, sg_index, buf' : ''}), 1u);
      } else {
        t = tree_item1(leaf(xb, mb, ec), p${subgroups ? ', sg_lane, sg_size, sg_index, buf' : ''});
      }
      buf = buf ^ 1u;
      if (p == 0u) {
        acc = comb(acc, has, t.v, t.h);
        has = has | t.h;
      }
    }
  }
  if (p == 0u) {
    if ((params[9] & ${FLAG.INITIAL}u) != 0u) {
      acc = comb(bitcast<VT>(params[10]), 1u, acc, has);
      has = 1u;
    }
    store_result(params[6] + row_offset(r, 1u) + g * params[7], acc, has);
  }
}
`;
}

/** `scan_main`: a workgroup scans a run block by block, from the carry of the runs before it. */
function scanMain(subgroups: boolean): string {
  return `
// params as reduce_main's (runs and blocks per run the same as the reduce that made the carries);
// out: the scanned row, at out offset + row offset + e · out step.
@compute @workgroup_size(${W})
fn scan_main(@builtin(workgroup_id) group: vec3u, @builtin(num_workgroups) groups: vec3u, @builtin(local_invocation_index) lane: u32${subgroups ? ', @builtin(subgroup_invocation_id) sg_lane: u32, @builtin(subgroup_size) sg_size: u32' : ''}) {
  let id = group.y * groups.x + group.x;
  let runs = params[2];
  if (id >= params[0] * runs) { return; }
  ${subgroups ? `var sg_first = 0u;
  if (sg_lane == 0u) { sg_first = atomicAdd(&sg_counter, 1u); }
  let sg_index = subgroupBroadcastFirst(sg_first);
  let p = sg_index * sg_size + sg_lane;` : 'let p = lane;'}
  let r = id / runs;
  let g = id % runs;
  let n = params[1];
  let blocks = (n + BLOCK - 1u) / BLOCK;
  let b0 = g * params[3];
  let b1 = min(b0 + params[3], blocks);
  let xb = params[4] + row_offset(r, 0u);
  let ob = params[6] + row_offset(r, 1u);
  var carry: VT;
  var hc = 0u;
  if ((params[9] & ${FLAG.CARRY}u) != 0u && g > 0u) {
    carry = bitcast<VT>(carry_words[r * runs + g - 1u]);
    hc = 1u;
  }
  var buf = 0u;
  for (var b = b0; b < b1; b = b + 1u) {
    let e = b * BLOCK + ${PER_LANE}u * p;
    let stride = params[7];
    if ((params[9] & ${FLAG.VEC}u) != 0u && (b + 1u) * BLOCK <= n) {
      // A complete block read 16 bytes at a time: every element present, so the same folds
      // without presence (the invocation before p's exists for p > 0).
      let w = bitcast<vec4<VT>>(x_vec[(xb + e) / 4u]);
      let f1 = fold(w.x, w.y);
      let f2 = fold(f1, w.z);
      let f3 = fold(f2, w.w);
      let lanes = scan_lanes_full(f3, p${subgroups ? ', sg_lane, sg_size, sg_index' : ''}, buf);
      buf = buf ^ 1u;
      var pre = lanes[0];
      var hp = select(0u, 1u, p > 0u);
      if (hc != 0u) {
        if (hp != 0u) { pre = fold(carry, pre); } else { pre = carry; }
        hp = 1u;
      }
      var y = vec4<VT>(w.x, f1, f2, f3);
      if (hp != 0u) { y = vec4<VT>(fold(pre, w.x), fold(pre, f1), fold(pre, f2), fold(pre, f3)); }
      store_result(ob + e * stride, y.x, 1u);
      store_result(ob + (e + 1u) * stride, y.y, 1u);
      store_result(ob + (e + 2u) * stride, y.z, 1u);
      store_result(ob + (e + 3u) * stride, y.w, 1u);
      if (hc != 0u) { carry = fold(carry, lanes[1]); } else { carry = lanes[1]; }
      hc = 1u;
      continue;
    }
    var s0 = load_item(xb, 0u, e);
    var s1 = load_item(xb, 0u, e + 1u);
    var s2 = load_item(xb, 0u, e + 2u);
    var s3 = load_item(xb, 0u, e + 3u);
    s1 = Item(comb(s0.v, s0.h, s1.v, s1.h), s0.h | s1.h);
    s2 = Item(comb(s1.v, s1.h, s2.v, s2.h), s1.h | s2.h);
    s3 = Item(comb(s2.v, s2.h, s3.v, s3.h), s2.h | s3.h);
    // before: the fold of every invocation's elements before p's in this block; total: the block's.
    let lanes = scan_lanes(s3, p${subgroups ? ', sg_lane, sg_size, sg_index' : ''}, buf);
    buf = buf ^ 1u;
    let pre = Item(comb(carry, hc, lanes[0].v, lanes[0].h), hc | lanes[0].h);
    if (e < n) { store_result(ob + e * stride, comb(pre.v, pre.h, s0.v, 1u), 1u); }
    if (e + 1u < n) { store_result(ob + (e + 1u) * stride, comb(pre.v, pre.h, s1.v, 1u), 1u); }
    if (e + 2u < n) { store_result(ob + (e + 2u) * stride, comb(pre.v, pre.h, s2.v, 1u), 1u); }
    if (e + 3u < n) { store_result(ob + (e + 3u) * stride, comb(pre.v, pre.h, s3.v, 1u), 1u); }
    carry = comb(carry, hc, lanes[1].v, lanes[1].h);
    hc = hc | lanes[1].h;
  }
}
`;
}

/**
 * What a tree carries per invocation: 'full4' four complete blocks side by side (`vec4<VT>`, no
 * presence), 'full1' one complete block (`VT`), 'item1' one block whose values may be absent
 * (`Item`: past the end of the row, or masked out).
 */
type TreeKind = 'full4' | 'full1' | 'item1';

/** The block's balanced tree across invocations, as `name`, for values of `kind`. */
function reduceTree(subgroups: boolean, kind: TreeKind, name: string): string {
  const T = { full4: 'vec4<VT>', full1: 'VT', item1: 'Item' }[kind];
  const combine = (a: string, b: string) =>
    kind === 'full4' ? `fold4(${a}, ${b})` : kind === 'full1' ? `fold(${a}, ${b})` : `Item(comb(${a}.v, ${a}.h, ${b}.v, ${b}.h), ${a}.h | ${b}.h)`;
  const shuffle = (v: string, d: string) => (kind === 'item1' ? `Item(subgroupShuffleDown(${v}.v, ${d}), subgroupShuffleDown(${v}.h, ${d}))` : `subgroupShuffleDown(${v}, ${d})`);
  // Workgroup slots are P4s; a scalar kind uses their first component.
  const slot = (i: string) => ({ full4: `stage[${i}].v`, full1: `stage[${i}].v.x`, item1: `Item(stage[${i}].v.x, stage[${i}].h.x)` })[kind];
  const setSlot = (i: string, v: string) =>
    kind === 'item1' ? `stage[${i}] = P4(vec4<VT>(${v}.v), vec4<u32>(${v}.h))` : kind === 'full1' ? `stage[${i}].v.x = ${v}` : `stage[${i}].v = ${v}`;
  const empty = { full4: 'vec4<VT>()', full1: 'VT()', item1: 'Item(VT(), 0u)' }[kind];
  if (!subgroups) {
    return `
// The balanced tree over the block's 256 invocation values in workgroup memory (${kind}); the
// result is valid in invocation 0.
fn ${name}(x: ${T}, p: u32) -> ${T} {
  ${setSlot('p', 'x')};
  workgroupBarrier();
  for (var d = 1u; d < W; d = d * 2u) {
    if ((p & (2u * d - 1u)) == 0u) {
      let c = ${combine(slot('p'), slot('p + d'))};
      ${setSlot('p', 'c')};
    }
    workgroupBarrier();
  }
  let t = ${slot('0u')};
  workgroupBarrier();
  return t;
}
`;
  }
  return `
// The balanced tree over the block's 256 invocation values (${kind}); the result is valid in
// invocation 0. Levels below the subgroup size are shuffles; the subgroup results then go through
// workgroup memory (slot buf of 2, so the next call need not wait for this one's readers), and
// every subgroup folds them the same way (only subgroup 0's result is used).
fn ${name}(x: ${T}, p: u32, sg_lane: u32, sg_size: u32, sg_index: u32, buf: u32) -> ${T} {
  var t = x;
  for (var d = 1u; d < sg_size; d = d * 2u) {
    let o = ${shuffle('t', 'd')};
    if ((sg_lane & (2u * d - 1u)) == 0u) { t = ${combine('t', 'o')}; }
  }
  let parts = W / sg_size;
  if (parts == 1u) { return t; }
  if (sg_lane == 0u) { ${setSlot('buf * PARTS + sg_index', 't')}; }
  workgroupBarrier();
  // Each lane folds q consecutive subgroup results as a balanced tree (in place: no other lane
  // touches them), then the lanes' values combine with shuffles: the same balanced tree over the
  // subgroup results.
  let q = max(1u, parts / sg_size);
  let s0 = buf * PARTS + sg_lane * q;
  var u = ${empty};
  if (sg_lane * q < parts) {
    for (var w = 1u; w < q; w = w * 2u) {
      for (var k = 0u; k < q; k = k + 2u * w) {
        let c = ${combine(slot('s0 + k'), slot('s0 + k + w'))};
        ${setSlot('s0 + k', 'c')};
      }
    }
    u = ${slot('s0')};
  }
  let lanes = min(parts, sg_size);
  for (var d = 1u; d < lanes; d = d * 2u) {
    let o = ${shuffle('u', 'd')};
    if ((sg_lane & (2u * d - 1u)) == 0u) { u = ${combine('u', 'o')}; }
  }
  return u;
}
`;
}

function scanLanesSubgroups(): string {
  return `
// For invocation p's total t (its 4 elements folded): [0] the fold of the totals of the
// invocations before p, [1] the fold of all 256 (the block's total). Hillis–Steele within the
// subgroup, subgroup totals left to right through workgroup memory (slot buf of 2).
fn scan_lanes(t: Item, p: u32, sg_lane: u32, sg_size: u32, sg_index: u32, buf: u32) -> array<Item, 2> {
  var inc = t;
  for (var d = 1u; d < sg_size; d = d * 2u) {
    let y = Item(subgroupShuffleUp(inc.v, d), subgroupShuffleUp(inc.h, d));
    if (sg_lane >= d) { inc = Item(comb(y.v, y.h, inc.v, inc.h), y.h | inc.h); }
  }
  var within = Item(subgroupShuffleUp(inc.v, 1u), subgroupShuffleUp(inc.h, 1u));
  if (sg_lane == 0u) { within = Item(VT(), 0u); }
  let base = buf * (PARTS + 1u);
  if (sg_lane == sg_size - 1u) { scan_stage[base + sg_index] = inc; }
  workgroupBarrier();
  let parts = W / sg_size;
  var before = Item(VT(), 0u);
  var total = Item(VT(), 0u);
  if (parts <= 8u) {
    // Few subgroups: every invocation folds their totals itself.
    for (var k = 0u; k < parts; k = k + 1u) {
      if (k == sg_index) { before = total; }
      let s = scan_stage[base + k];
      total = Item(comb(total.v, total.h, s.v, s.h), total.h | s.h);
    }
  } else {
    // Many (small subgroups): one invocation folds them, in the same order, and leaves each
    // subgroup the fold of those before it (and the block's total in slot parts).
    if (p == 0u) {
      var run = Item(VT(), 0u);
      for (var k = 0u; k < parts; k = k + 1u) {
        let s = scan_stage[base + k];
        scan_stage[base + k] = run;
        run = Item(comb(run.v, run.h, s.v, s.h), run.h | s.h);
      }
      scan_stage[base + parts] = run;
    }
    workgroupBarrier();
    before = scan_stage[base + sg_index];
    total = scan_stage[base + parts];
  }
  return array<Item, 2>(Item(comb(before.v, before.h, within.v, within.h), before.h | within.h), total);
}
`;
}

/** scan_lanes for a complete block: no presence; [0] is meaningless for p = 0. */
function scanLanesFullSubgroups(): string {
  return `
fn scan_lanes_full(t: VT, p: u32, sg_lane: u32, sg_size: u32, sg_index: u32, buf: u32) -> array<VT, 2> {
  var inc = t;
  for (var d = 1u; d < sg_size; d = d * 2u) {
    let y = subgroupShuffleUp(inc, d);
    if (sg_lane >= d) { inc = fold(y, inc); }
  }
  let within = subgroupShuffleUp(inc, 1u);
  let base = buf * (PARTS + 1u);
  if (sg_lane == sg_size - 1u) { scan_stage[base + sg_index].v = inc; }
  workgroupBarrier();
  let parts = W / sg_size;
  var before: VT;
  var total: VT;
  if (parts <= 8u) {
    total = scan_stage[base].v;
    for (var k = 1u; k < parts; k = k + 1u) {
      if (k == sg_index) { before = total; }
      total = fold(total, scan_stage[base + k].v);
    }
  } else {
    if (p == 0u) {
      var run = scan_stage[base].v;
      for (var k = 1u; k < parts; k = k + 1u) {
        let s = scan_stage[base + k].v;
        scan_stage[base + k].v = run;
        run = fold(run, s);
      }
      scan_stage[base + parts].v = run;
    }
    workgroupBarrier();
    before = scan_stage[base + sg_index].v;
    total = scan_stage[base + parts].v;
  }
  var ex = before;
  if (sg_index == 0u) { ex = within; } else if (sg_lane > 0u) { ex = fold(before, within); }
  return array<VT, 2>(ex, total);
}
`;
}

function scanLanesFullWorkgroup(): string {
  return `
fn scan_lanes_full(t: VT, p: u32, buf: u32) -> array<VT, 2> {
  scan_stage[p].v = t;
  workgroupBarrier();
  for (var d = 1u; d < W; d = d * 2u) {
    var y = scan_stage[p].v;
    if (p >= d) { y = fold(scan_stage[p - d].v, y); }
    workgroupBarrier();
    scan_stage[p].v = y;
    workgroupBarrier();
  }
  var before: VT;
  if (p > 0u) { before = scan_stage[p - 1u].v; }
  let total = scan_stage[W - 1u].v;
  workgroupBarrier();
  return array<VT, 2>(before, total);
}
`;
}

function scanLanesWorkgroup(): string {
  return `
// As the subgroup version with one "subgroup" of 256: Hillis–Steele in workgroup memory.
fn scan_lanes(t: Item, p: u32, buf: u32) -> array<Item, 2> {
  scan_stage[p] = t;
  workgroupBarrier();
  for (var d = 1u; d < W; d = d * 2u) {
    var y = scan_stage[p];
    if (p >= d) {
      let a = scan_stage[p - d];
      y = Item(comb(a.v, a.h, y.v, y.h), a.h | y.h);
    }
    workgroupBarrier();
    scan_stage[p] = y;
    workgroupBarrier();
  }
  var before = Item(VT(), 0u);
  if (p > 0u) { before = scan_stage[p - 1u]; }
  let total = scan_stage[W - 1u];
  workgroupBarrier();
  return array<Item, 2>(before, total);
}
`;
}
