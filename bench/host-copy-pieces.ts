/**
 * The host's own memory copy rate by piece size (`Uint8Array.set`, no GPU): what one JS thread's
 * copies into and out of staging memory can reach when a transfer is cut into pieces of that size.
 * glibc's memcpy switches to non-temporal stores only above `glibc.cpu.x86_non_temporal_threshold`
 * (printed here, from `ld.so --list-tunables`); a streamed call copies each operand of a chunk in
 * one piece (64 MiB for a SAXPY in chunks of 192 MiB), `toDevice` in pieces of up to 256 MiB. Each
 * size is timed in this process and in a child process started with the threshold lowered to
 * LOWERED (GLIBC_TUNABLES is read at process start only). Last, the whole in one piece into a new
 * array, as `toHost()` makes one (its page faults).
 *
 *   npx tsx bench/host-copy-pieces.ts            # 1 GiB copied per reading, medians of 5
 *   npx tsx bench/host-copy-pieces.ts --quick    # 256 MiB
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';

const quick = process.argv.includes('--quick');
const TOTAL = quick ? 2 ** 28 : 2 ** 30;
const PIECES_MIB = [16, 64, 128, 192, 256, 512].filter((p) => p * 2 ** 20 <= TOTAL);
const REPS = 5;
const LOWERED = 'glibc.cpu.x86_non_temporal_threshold=0x1000000';

/** GB/s of copying TOTAL bytes in pieces of each size, medians of REPS. */
function rates(): number[] {
  const from = new Uint8Array(TOTAL).fill(7);
  const to = new Uint8Array(TOTAL).fill(1);
  return PIECES_MIB.map((mib) => {
    const piece = mib * 2 ** 20;
    const times: number[] = [];
    for (let r = 0; r <= REPS; r++) {
      const t0 = performance.now();
      for (let at = 0; at < TOTAL; at += piece) to.set(from.subarray(at, at + piece), at);
      if (r > 0) times.push(performance.now() - t0);
    }
    return TOTAL / median(times) / 1e6;
  });
}

/**
 * GB/s of copying TOTAL bytes in one piece into an array made for it (`new Uint8Array` + `set`:
 * what `toHost()` without `into` does after the staging copy), medians of REPS: the new array's
 * pages are faulted in as they are first written (4 KiB at a time unless the kernel backs it
 * with huge pages), where the table's rows write into an array touched before.
 */
function newArrayRate(): number {
  const from = new Uint8Array(TOTAL).fill(7);
  const times: number[] = [];
  for (let r = 0; r <= REPS; r++) {
    const t0 = performance.now();
    const to = new Uint8Array(TOTAL);
    to.set(from);
    if (r > 0) times.push(performance.now() - t0);
  }
  return TOTAL / median(times) / 1e6;
}

if (process.argv.includes('--child')) {
  console.log(JSON.stringify(rates()));
} else {
  const tunables = spawnSync('sh', ['-c', 'ld.so --list-tunables 2>/dev/null || /lib64/ld-linux-x86-64.so.2 --list-tunables'], { encoding: 'utf8' });
  const threshold = (tunables.stdout ?? '').split('\n').find((l) => l.includes('non_temporal_threshold'))?.trim() ?? 'not listed';
  console.log(`glibc: ${threshold}`);
  const own = rates();
  console.error(`this process: ${own.map((g, i) => `${PIECES_MIB[i]} MiB ${g.toFixed(2)}`).join(', ')} GB/s`);
  const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--child', ...(quick ? ['--quick'] : [])], {
    encoding: 'utf8',
    env: { ...process.env, GLIBC_TUNABLES: LOWERED },
  });
  const lowered = child.status === 0 ? (JSON.parse(child.stdout.trim().split('\n').at(-1)!) as number[]) : [];
  console.log(
    markdownTable(
      ['piece', 'GB/s', `GB/s with ${LOWERED}`].map((h, i) => ({ header: h, align: i === 0 ? 'left' : 'right' })),
      PIECES_MIB.map((mib, i) => [`${mib} MiB`, own[i]!.toFixed(2), lowered[i]?.toFixed(2) ?? `child failed: ${child.stderr.slice(-200)}`]),
    ),
  );
  let hugePages = 'not readable';
  try {
    hugePages = readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8').trim();
  } catch {
    // not Linux
  }
  console.log(`${TOTAL / 2 ** 20} MiB in one piece into a new array: ${newArrayRate().toFixed(2)} GB/s (transparent huge pages: ${hugePages})`);
}
