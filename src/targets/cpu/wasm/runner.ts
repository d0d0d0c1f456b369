/**
 * What runs a compiled Wasm kernel over a range of a call's loop space, on any thread: the calling
 * thread (cpu target, and the parallel target's share of chunks) and every worker of the parallel
 * target. It needs no allocator and no compiler — only the module, the shared memory and a
 * description of the call's operands — so workers import this file alone.
 */
import type { MemoryLayout, Runner, RunnerArgs } from '../memory-layout.js';
import type { IndexCheckSite } from '../../../compiler/source-excerpt.js';
import { runtimeFunctions } from '../js/codegen.js';
import { RT } from '../js/emit-js.js';
import { type WasmMemory, type WasmModule, WebAssemblyApi } from './wasm-api.js';

/** The kernel's exported loop: operand pointers/values and steps, core shapes, count, scratch. */
export type WasmRun = (...params: number[]) => void;

/**
 * How a call's runner arguments become the exported loop's parameters: plain data, so it can be
 * posted to workers.
 */
export interface DriveSpec {
  /** Per operand: how it moves along the innermost loop dimension (the memory layout's). */
  readonly inner: MemoryLayout['inner'];
  /** Per operand, per core axis: whether its stride is 1 (then no stride parameter). */
  readonly coreUnit: MemoryLayout['coreUnit'];
  /** Per operand: its core dimensions (0 for a scalar parameter). */
  readonly ndims: readonly number[];
  /** Per operand: bytes per element. */
  readonly bytes: readonly number[];
}

/**
 * Instantiates a compiled kernel module over a memory. `imports` are the names the module imports
 * (`Math` functions, `fmod`, and `oob/n` for out-of-bounds errors worded as the JS engine words them).
 */
export function instantiateKernel(module: WasmModule, imports: readonly string[], sites: readonly IndexCheckSite[], memory: WasmMemory): WasmRun {
  const rt = runtimeFunctions(sites);
  const oob = rt[RT.oob] as (site: number, index: number[], dims: number[]) => never;
  const env: Record<string, unknown> = { memory };
  for (const name of imports) {
    if (name === 'fmod') env[name] = (a: number, b: number) => a % b;
    else if (name.startsWith('oob/')) {
      const n = Number(name.slice(4));
      env[name] = (site: number, ...rest: number[]) => oob(site, rest.slice(0, n), rest.slice(n));
    } else env[name] = (Math as unknown as Record<string, unknown>)[name.split('/')[0]!];
  }
  const instance = new WebAssemblyApi.Instance(module, { env });
  return instance.exports.run as WasmRun;
}

/** Byte addresses of each array operand's element 0, for arguments whose arrays lie in Wasm memory. */
export function addressesOf(spec: DriveSpec, args: RunnerArgs): number[] {
  const addresses = new Array<number>(spec.inner.length);
  for (let i = 0; i < addresses.length; i++) {
    if (spec.inner[i] === 'scalar') continue;
    addresses[i] = (args.data[i] as unknown as ArrayBufferView).byteOffset + args.offset[i]! * spec.bytes[i]!;
  }
  return addresses;
}

/**
 * A runner (the JS engine's calling convention) that runs the Wasm kernel: every array of `args`
 * must view the Wasm memory `run` was instantiated over. `scratch` is this thread's own area for
 * the kernel's local arrays.
 */
export function wasmRunner(spec: DriveSpec, run: WasmRun, scratch: number): Runner {
  return (args, start, end) => drive(spec, args, run, scratch, addressesOf(spec, args), start, end);
}

/** Calls `run` once per row of the innermost loop dimension of `[start, end)`. */
export function drive(spec: DriveSpec, args: RunnerArgs, run: WasmRun, scratch: number, addresses: readonly number[], start: number, end: number): void {
  if (end > start) driver(spec, args, run, scratch)(addresses, start, end);
}

/**
 * `drive` for many ranges of one call (the blocks of block-staging.ts): what does not change
 * between them — core shapes and strides, scalars — is gathered once, and the parameter list is
 * reused, so that a range allocates nothing. `args.loopShape` is read at each range (a block
 * changes its first dimension in place).
 */
export function driver(spec: DriveSpec, args: RunnerArgs, run: WasmRun, scratch: number): (addresses: readonly number[], start: number, end: number) => void {
  const nops = spec.inner.length;
  const { bytes } = spec;
  const tail: number[] = [];
  for (let i = 0; i < nops; i++) {
    for (let a = 0; a < spec.ndims[i]!; a++) {
      tail.push(args.coreShape[i]![a]!);
      if (!spec.coreUnit[i]![a]) tail.push(args.coreStrides[i]![a]!);
    }
  }
  const params: number[] = [];
  /** Per operand, the byte address of the current row's element 0. */
  const rowBase = new Array<number>(nops).fill(0);
  const idx: number[] = [];
  const call = (R: number, j0: number, count: number) => {
    params.length = 0;
    for (let i = 0; i < nops; i++) {
      const step = spec.inner[i];
      if (step === 'scalar') {
        const v = args.scalars[i];
        params.push(typeof v === 'boolean' ? (v ? 1 : 0) : (v as number));
        continue;
      }
      const inner = R === 0 ? 0 : args.loopStrides[i]![R - 1]! * bytes[i]!;
      params.push(rowBase[i]! + j0 * inner);
      if (step === 'strided') params.push(inner);
    }
    for (let t = 0; t < tail.length; t++) params.push(tail[t]!);
    params.push(count, scratch);
    run(...params);
  };
  return (addresses, start, end) => {
    if (end <= start) return;
    const shape = args.loopShape;
    const R = shape.length;
    if (R <= 1) {
      for (let i = 0; i < nops; i++) rowBase[i] = addresses[i]!;
      call(R, start, end - start);
      return;
    }
    idx.length = R;
    for (let q = R - 1, rem = start; q >= 0; q--) {
      idx[q] = rem % shape[q]!;
      rem = (rem - idx[q]!) / shape[q]!;
    }
    const inner = shape[R - 1]!;
    let k = start;
    while (k < end) {
      const j0 = idx[R - 1]!;
      const count = Math.min(inner - j0, end - k);
      for (let i = 0; i < nops; i++) {
        if (spec.inner[i] === 'scalar') continue;
        let b = addresses[i]!;
        for (let q = 0; q < R - 1; q++) b += idx[q]! * args.loopStrides[i]![q]! * bytes[i]!;
        rowBase[i] = b;
      }
      call(R, j0, count);
      k += count;
      idx[R - 1] = 0;
      for (let q = R - 2; q >= 0; q--) {
        if (++idx[q]! < shape[q]!) break;
        idx[q] = 0;
      }
    }
  };
}
