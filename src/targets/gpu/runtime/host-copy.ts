/**
 * How large the pieces of the host's copies into and out of staging memory are made. Those copies
 * are the cost of a gpu call on host arrays (one JS thread does them all, for every device), and
 * glibc's memcpy copies about twice as fast above its non-temporal threshold (one H100 host:
 * ~6 GB/s in pieces of 16–128 MiB, ~12 GB/s from 192 MiB, the threshold 151 MiB there;
 * bench/host-copy-pieces.ts, bench/results/host-copy-pieces-nvidia-h100.md). So a chunked call's
 * largest host operand is copied in pieces of at least the threshold times {@link PIECE_MARGIN}
 * (streaming.ts, chunkBudget), and the staging buffers of one transfer may be as large as such a
 * piece (buffers.ts). The threshold is the host's own (the platform reads it: glibc derives it from
 * the caches), not a constant of one machine.
 */
import { platform } from '../../../platform/platform.js';

/** Pieces are made this much larger than the threshold: size classes and evened-out chunks shrink them a little. */
const PIECE_MARGIN = 1.1;
/** The piece where the threshold is not known (a page, another libc): 64 MiB, a SAXPY's share of 192 MiB chunks. */
const DEFAULT_PIECE_BYTES = 64 * 2 ** 20;

/**
 * The bytes of a piece of a host copy that runs at the host's full copy rate: above its
 * non-temporal threshold where that is known, else {@link DEFAULT_PIECE_BYTES}.
 *
 * @example
 * pieceTarget(); // 166 MiB where glibc's threshold is 151 MiB
 */
export function pieceTarget(): number {
  let threshold: number | undefined;
  try {
    threshold = platform().hostCopyThreshold?.();
  } catch {
    threshold = undefined; // no platform installed: a module used on its own
  }
  return threshold === undefined ? DEFAULT_PIECE_BYTES : Math.ceil(threshold * PIECE_MARGIN);
}
