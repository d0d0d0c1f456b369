/**
 * Arrays placed across several GPU devices (`setGpuOptions({ devices })`): cut along the first
 * dimension into consecutive blocks of rows, one `DeviceArray` per device. A gpu call on sharded
 * arrays runs once per shard, each on its shard's device (multi-device.ts), and returns sharded
 * results; `toHost()` gathers the shards in order.
 */
import { DTYPES, type DType, type TypedArray } from '../../../dtypes.js';
import { ArgumentError } from '../../../errors.js';

/**
 * What a shard is to this module: a DeviceArray (device-array.ts), named by what is used of it,
 * as device-array.ts makes sharded arrays and must not be imported back.
 */
export interface Shard {
  readonly shape: readonly number[];
  readonly ndim: number;
  readonly dtype: DType;
  readonly size: number;
  readonly deviceIndex: number;
  toHost<T extends TypedArray>(into?: T): Promise<T>;
  destroy(): void;
}

/** An array cut along its first dimension across devices. Create with `toDevice(x, { shard: true })`. */
export class ShardedArray {
  /** Marks sharded arrays for the gpu target, which runs calls on them per shard. */
  readonly kind = 'sharded' as const;
  readonly shape: readonly number[];
  readonly dtype: DType;
  /** Number of elements. */
  readonly size: number;
  /** The first-dimension extent of each shard, in order. */
  readonly rows: readonly number[];

  /**
   * Puts shards together; most code wants `toDevice(x, { shard: true })` or gets sharded arrays
   * as the results of a call on them.
   *
   * @param shards consecutive blocks of rows, each on its device; same dtype and the same
   *   extents after the first dimension
   * @throws ArgumentError for no shards, 0-d shards, or shards that do not fit together
   * @example
   * const whole = new ShardedArray([top, bottom]); // top on device 0, bottom on device 1
   */
  constructor(readonly shards: readonly Shard[]) {
    const first = shards[0];
    if (!first || first.ndim === 0) throw new ArgumentError(`ShardedArray: expected one or more device arrays of 1 or more dimensions, found ${first ? 'a 0-d array' : 'none'}`);
    const tail = first.shape.slice(1).join(', ');
    shards.forEach((s, k) => {
      if (s.dtype !== first.dtype || s.shape.slice(1).join(', ') !== tail || s.ndim !== first.ndim) {
        throw new ArgumentError(`ShardedArray: shard ${k} is ${s.dtype} [${s.shape.join(', ')}], but shard 0 is ${first.dtype} [${first.shape.join(', ')}]: shards differ only in their first dimension`);
      }
    });
    this.shards = Object.freeze([...shards]);
    this.rows = Object.freeze(shards.map((s) => s.shape[0]!));
    this.shape = Object.freeze([this.rows.reduce((a, b) => a + b, 0), ...first.shape.slice(1)]);
    this.dtype = first.dtype;
    this.size = shards.reduce((n, s) => n + s.size, 0);
  }

  /** Number of dimensions. */
  get ndim(): number {
    return this.shape.length;
  }

  /** The device of each shard, in order. */
  get devices(): readonly number[] {
    return this.shards.map((s) => s.deviceIndex);
  }

  /**
   * Copies the elements to the host in C order, each shard from its device (all at once).
   *
   * @param into a typed array of the dtype's storage type with room for `size` elements; a new one when omitted
   * @returns `into`, or a new typed array
   * @throws DeviceError when a shard was destroyed or its device is gone (it names the device)
   * @throws ArgumentError when `into` is of another type or too small
   * @example
   * const table = await (await hermite(await toDevice(xs, { shard: true }), { dims: { n: 16 } })).toHost();
   */
  async toHost<T extends TypedArray = TypedArray>(into?: T): Promise<T> {
    const { arrayType } = DTYPES[this.dtype];
    if (into && (!(into instanceof arrayType) || into.length < this.size)) {
      throw new ArgumentError(`toHost: expected a ${arrayType.name} of at least ${this.size} elements to copy into, got ${into.constructor.name} of ${into.length}`);
    }
    const out = (into ?? new arrayType(this.size)) as T;
    let start = 0;
    const copies = this.shards.map((s) => {
      const part = out.subarray(start, start + s.size) as T;
      start += s.size;
      return s.toHost(part);
    });
    // Every copy settles before the call does: none writes into `out` after it has returned.
    const settled = await Promise.allSettled(copies);
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    return out;
  }

  /** Frees every shard's GPU memory now. Idempotent. */
  destroy(): void {
    for (const s of this.shards) s.destroy();
  }

  /** e.g. `ShardedArray(float32, [1000], rows 500 on device 0, 500 on device 1)` */
  toString(): string {
    const where = this.shards.map((s) => `${s.shape[0]} on device ${s.deviceIndex}`).join(', ');
    return `ShardedArray(${this.dtype}, [${this.shape.join(', ')}], rows ${where})`;
  }
}

// Merged into the class: `using z = await f(xs)` destroys the shards when its scope ends.
export interface ShardedArray {
  /** Same as {@link ShardedArray.destroy}. */
  [Symbol.dispose](): void;
}
if (typeof Symbol.dispose === 'symbol') {
  Object.defineProperty(ShardedArray.prototype, Symbol.dispose, {
    value: function dispose(this: ShardedArray): void {
      this.destroy();
    },
    writable: true,
    configurable: true,
  });
}

/**
 * Whether `x` is a sharded array.
 *
 * @example
 * if (isSharded(arg)) console.log(arg.devices);
 */
export function isSharded(x: unknown): x is ShardedArray {
  return typeof x === 'object' && x !== null && (x as { kind?: unknown }).kind === 'sharded';
}

/**
 * How `n` rows are cut over `parts` devices: consecutive blocks, the first `n % parts` one row longer.
 *
 * @example
 * splitRows(10, 3); // [4, 3, 3]
 */
export function splitRows(n: number, parts: number): number[] {
  const count = Math.max(1, Math.min(parts, n));
  const base = Math.floor(n / count);
  return Array.from({ length: count }, (_, k) => base + (k < n % count ? 1 : 0));
}
