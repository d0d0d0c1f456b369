/**
 * A Zarr store on the filesystem that cannot be led outside its root, and whose writes are atomic.
 *
 * zarrita reads and writes the Zarr format (metadata, codecs, chunk keys); a store only maps keys to
 * bytes. This one differs from zarrita's FileSystemStore in two ways that running chunks on other
 * processes needs:
 * - **Confinement**: every key and every array path is checked before it touches the filesystem: no
 *   `..` or empty segment, only safe characters, and the resolved file stays below the root's real
 *   path (a symbolic link inside the store that points out is refused too). Chunk references come
 *   from a queue, so they are input like any other.
 * - **Atomic writes**: a chunk is written to a temporary file beside it and renamed over the old one,
 *   so a reader never sees half a chunk, and a worker killed mid-write leaves the previous chunk (or
 *   none), never a torn one. A job retried after its worker died writes the same bytes again.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChunkError } from '../cluster/errors.js';
import type { ChunkLease } from './chunk-buffers.js';

/** A key of a Zarr store: `/`-separated, absolute (zarrita's `AbsolutePath`). */
type StoreKey = `/${string}`;

/** The suffix of a chunk's temporary file while it is written. */
const PARTIAL = '.partial';

/** Segments of keys and array paths: what Zarr writes (`c`, `0`, `zarr.json`, names of arrays). */
const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,254}$/;

/**
 * Checks a path inside a store (`'temperature'`, `'a/b'`, a chunk key `'/x/c/0/3'`) and returns it
 * without leading or trailing slashes.
 *
 * @throws ChunkError when it has an empty, `.` or `..` segment, or characters other than letters,
 *   digits, `.`, `_` and `-`
 */
export function checkStorePath(p: string, what = 'path'): string {
  if (typeof p !== 'string' || p.length > 1024) throw new ChunkError(`A store ${what} must be a string of at most 1024 characters, found ${typeof p === 'string' ? `${p.length} characters` : typeof p}.`);
  const trimmed = p.replace(/^\/+/, '').replace(/\/+$/, '');
  if (trimmed === '') return '';
  for (const segment of trimmed.split('/')) {
    if (!SEGMENT.test(segment) || segment === '.' || segment === '..') {
      throw new ChunkError(`The store ${what} '${p}' has the segment '${segment}': segments are letters, digits, '.', '_' and '-', not '.' or '..' and not empty, so that no path can leave the store.`);
    }
  }
  return trimmed;
}

/** zarrita's get options (which it hands to the store as they are), and this store's own. */
export interface StoreGetOptions {
  readonly signal?: AbortSignal;
  /** Read into a `SharedArrayBuffer`. */
  readonly shared?: boolean;
  /** With `shared`: take that buffer from this chunk's lease (chunk-buffers.ts) rather than a new one. */
  readonly lease?: ChunkLease;
}

export class ConfinedFileStore {
  /** The root's real path (symbolic links resolved), which every file must stay below. */
  readonly root: string;

  constructor(root: string) {
    fs.mkdirSync(root, { recursive: true });
    this.root = fs.realpathSync(root);
  }

  /**
   * The bytes of `key`, or undefined where there is none. With `shared`, they lie in a
   * `SharedArrayBuffer`, which another thread (a cluster worker's kernel thread) uses where it is.
   */
  async get(key: StoreKey, options?: StoreGetOptions): Promise<Uint8Array | undefined> {
    const file = await this.resolve(key);
    let handle: fs.promises.FileHandle;
    try {
      handle = await fs.promises.open(file, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    try {
      // One read of the whole file into one buffer (readFile reads 512 KiB at a time, each a trip
      // to the thread pool, and the caller's Uint8Array would be a second copy).
      const { size } = await handle.stat();
      const bytes = options?.shared ? new Uint8Array(options.lease?.take(size) ?? new SharedArrayBuffer(size)) : new Uint8Array(size);
      let filled = 0;
      while (filled < size) {
        const { bytesRead } = await handle.read(bytes, filled, size - filled, filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      return filled === size ? bytes : bytes.subarray(0, filled);
    } finally {
      await handle.close();
    }
  }

  async set(key: StoreKey, value: Uint8Array): Promise<void> {
    const file = await this.resolve(key);
    await fs.promises.mkdir(path.dirname(file), { recursive: true });
    await this.checkInside(path.dirname(file), key);
    const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}${PARTIAL}`;
    try {
      // One write call for the whole value where the system takes it (writeFile writes 512 KiB at a time).
      const handle = await fs.promises.open(temp, 'wx');
      try {
        let written = 0;
        while (written < value.byteLength) written += (await handle.write(value, written, value.byteLength - written)).bytesWritten;
      } finally {
        await handle.close();
      }
      await fs.promises.rename(temp, file);
    } catch (e) {
      await fs.promises.rm(temp, { force: true });
      throw e;
    }
  }

  /**
   * Removes the temporary files of writes that never finished (a process killed between writing and
   * renaming) below `prefix`, e.g. an array's chunk folder. Only for when no write there can still
   * be in flight: the end of a call whose every chunk is written.
   */
  async removeUnfinishedWrites(prefix: string): Promise<number> {
    const dir = path.join(this.root, ...checkStorePath(prefix).split('/').filter(Boolean));
    let removed = 0;
    const walk = async (d: string): Promise<void> => {
      const entries = await fs.promises.readdir(d, { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) await walk(p);
        else if (e.isFile() && e.name.endsWith(PARTIAL)) {
          await fs.promises.rm(p, { force: true });
          removed++;
        }
      }
    };
    await walk(dir);
    return removed;
  }

  /** The file of `key`, checked to stay inside the store. */
  private async resolve(key: string): Promise<string> {
    const rel = checkStorePath(key, 'key');
    const file = path.join(this.root, ...rel.split('/'));
    // The nearest existing ancestor must resolve inside the root (a link to elsewhere is refused).
    let probe = path.dirname(file);
    while (probe.length > this.root.length && !fs.existsSync(probe)) probe = path.dirname(probe);
    await this.checkInside(probe, key);
    if (fs.existsSync(file)) await this.checkInside(file, key);
    return file;
  }

  private async checkInside(p: string, key: string): Promise<void> {
    const real = await fs.promises.realpath(p);
    if (real !== this.root && !real.startsWith(this.root + path.sep)) {
      throw new ChunkError(`The store key '${key}' leads outside the store's root '${this.root}' (through a symbolic link to '${real}').`);
    }
  }
}
