/**
 * Shared memory for the chunks a cluster worker holds, used again from chunk to chunk.
 *
 * A worker reads each input chunk into a `SharedArrayBuffer` and computes each output chunk into
 * another (its kernel thread uses them where they are). New ones for every chunk cost, per 8 MiB, a
 * fresh mapping of zeroed pages that the first read or kernel store faults in page by page, and its
 * unmapping once collected — on every chunk of every worker at once, where W workers share the
 * machine's memory system (and, on a sandboxed host, its page-fault handling). A worker holds only
 * its `concurrency` chunks at a time, so it keeps the buffers of finished chunks, by size, for the
 * next ones.
 *
 * A chunk takes its buffers through a {@link ChunkLease} and gives them all back when it is written
 * (or has failed): nothing of the chunk may use them after that.
 */

/** Buffers of one byte size kept for reuse, at most; more come only from chunks of several operands. */
const KEPT_PER_SIZE = 32;

export class ChunkBuffers {
  private readonly free = new Map<number, SharedArrayBuffer[]>();

  /** A lease for one chunk's buffers. */
  lease(): ChunkLease {
    return new ChunkLease(this);
  }

  /** A buffer of exactly `bytes` bytes, kept from an earlier chunk or new; its contents are whatever that chunk left. */
  take(bytes: number): SharedArrayBuffer {
    return this.free.get(bytes)?.pop() ?? new SharedArrayBuffer(bytes);
  }

  give(buffer: SharedArrayBuffer): void {
    let list = this.free.get(buffer.byteLength);
    if (!list) this.free.set(buffer.byteLength, (list = []));
    if (list.length < KEPT_PER_SIZE) list.push(buffer);
  }
}

/** The buffers one chunk took, given back together. */
export class ChunkLease {
  private readonly taken: SharedArrayBuffer[] = [];

  constructor(private readonly pool: ChunkBuffers) {}

  /** A buffer for bytes that will be overwritten whole (a chunk read from the store). */
  take(bytes: number): SharedArrayBuffer {
    const buffer = this.pool.take(bytes);
    this.taken.push(buffer);
    return buffer;
  }

  /** A buffer of zeros (an output, which a kernel may leave partly unwritten, like a new array). */
  takeZeroed(bytes: number): SharedArrayBuffer {
    const buffer = this.take(bytes);
    // In the widest elements the length allows: V8 fills a SharedArrayBuffer element by element
    // (relaxed atomic stores), so bytes take ~4× as long as 8-byte words (1.3 against 0.35 ms per
    // 8 MiB on the 2-core VM).
    if (bytes % 8 === 0) new Float64Array(buffer).fill(0);
    else if (bytes % 4 === 0) new Uint32Array(buffer).fill(0);
    else new Uint8Array(buffer).fill(0);
    return buffer;
  }

  /** Gives every buffer back; the chunk must not use them after. */
  release(): void {
    for (const buffer of this.taken.splice(0)) this.pool.give(buffer);
  }
}
