/**
 * Copies host bytes to one device and back through mapped staging buffers, the way the gpu target
 * does for a call's host operands (runtime/buffers.ts): a ring of `inFlight` MAP_WRITE buffers of
 * `chunkBytes`, each filled by the host (`Uint8Array.set` into its mapping), unmapped, copied into
 * the device buffer by the queue and mapped again for its next chunk; back the same way through
 * MAP_READ buffers, the device's copy of chunk i + inFlight queued while the host copies chunk i
 * out. Runs unchanged on the main thread and in a worker (bench/lib/copy-worker.ts), so the two
 * are measured with the same code.
 */

/** One staging buffer of the ring and the mapping it waits for before its next chunk. */
interface Slot {
  readonly buffer: GPUBuffer;
  ready: Promise<undefined>;
}

export class StagingCopier {
  /** Where the host's bytes go on the device, and come back from. */
  private readonly store: GPUBuffer;
  private readonly writes: Slot[];
  private readonly reads: GPUBuffer[];

  /**
   * @param device the device
   * @param capacity the most bytes one upload or download moves (a multiple of 4)
   * @param chunkBytes bytes per staging buffer (a multiple of 4)
   * @param inFlight staging buffers per direction
   */
  constructor(
    private readonly device: GPUDevice,
    capacity: number,
    private readonly chunkBytes: number,
    inFlight: number,
  ) {
    this.store = device.createBuffer({ size: capacity, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    this.writes = Array.from({ length: inFlight }, () => {
      const buffer = device.createBuffer({ size: chunkBytes, usage: GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC, mappedAtCreation: true });
      return { buffer, ready: Promise.resolve(undefined) };
    });
    this.reads = Array.from({ length: inFlight }, () => device.createBuffer({ size: chunkBytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }));
  }

  /**
   * Copies `source` (a multiple of 4 bytes) to the device, from byte 0 of its store; resolves when
   * the device has it.
   */
  async upload(source: Uint8Array): Promise<void> {
    for (let at = 0, i = 0; at < source.byteLength; at += this.chunkBytes, i++) {
      const slot = this.writes[i % this.writes.length]!;
      await slot.ready;
      const n = Math.min(this.chunkBytes, source.byteLength - at);
      new Uint8Array(slot.buffer.getMappedRange(0, n)).set(source.subarray(at, at + n));
      slot.buffer.unmap();
      const encoder = this.device.createCommandEncoder();
      encoder.copyBufferToBuffer(slot.buffer, 0, this.store, at, n);
      this.device.queue.submit([encoder.finish()]);
      slot.ready = slot.buffer.mapAsync(GPUMapMode.WRITE);
    }
    await Promise.all(this.writes.map((slot) => slot.ready));
  }

  /** Copies `into.byteLength` bytes (a multiple of 4) from byte 0 of the device's store into `into`. */
  async download(into: Uint8Array): Promise<void> {
    const chunks = Math.ceil(into.byteLength / this.chunkBytes);
    const flights: Promise<undefined>[] = [];
    const issue = (i: number) => {
      if (i >= chunks) return;
      const staging = this.reads[i % this.reads.length]!;
      const at = i * this.chunkBytes;
      const encoder = this.device.createCommandEncoder();
      encoder.copyBufferToBuffer(this.store, at, staging, 0, Math.min(this.chunkBytes, into.byteLength - at));
      this.device.queue.submit([encoder.finish()]);
      flights[i] = staging.mapAsync(GPUMapMode.READ);
    };
    for (let i = 0; i < this.reads.length; i++) issue(i);
    for (let i = 0; i < chunks; i++) {
      await flights[i];
      const staging = this.reads[i % this.reads.length]!;
      const at = i * this.chunkBytes;
      const n = Math.min(this.chunkBytes, into.byteLength - at);
      into.set(new Uint8Array(staging.getMappedRange(0, n)), at);
      staging.unmap();
      issue(i + this.reads.length);
    }
  }

  /** Destroys its buffers once no mapping is pending (destroying one mid-mapping crashes dawn.node). */
  async destroy(): Promise<void> {
    await Promise.allSettled(this.writes.map((slot) => slot.ready));
    for (const slot of this.writes) slot.buffer.destroy();
    for (const buffer of this.reads) buffer.destroy();
    this.store.destroy();
  }
}
