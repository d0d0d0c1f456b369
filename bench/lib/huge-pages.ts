/**
 * Whether a fresh typed array of this process gets 2 MiB pages, which decides what its first
 * writes cost (one page fault per 4 KiB page otherwise: bench/results/fresh-output-*.md).
 *
 * V8 takes ArrayBuffer memory from Node's allocator, which takes it from glibc's `malloc`/`calloc`;
 * with the host's transparent huge pages set to `madvise` (Debian's and many distributions'
 * default), only memory a program advises gets huge pages, and glibc advises its allocations only
 * when the process starts with `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` (glibc ≥ 2.35). NumPy
 * advises its own large arrays, so its fresh outputs get huge pages on such hosts by default.
 */
import { readFileSync } from 'node:fs';

/** The host's transparent huge page mode (`always`, `madvise`, `never`), or undefined off Linux. */
export function transparentHugePages(): string | undefined {
  try {
    return /\[(\w+)\]/.exec(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

/** Whether this process started with glibc's malloc asking for transparent huge pages. */
export function mallocAdvisesHugePages(): boolean {
  return /(^|:)glibc\.malloc\.hugetlb=1($|:)/.test(process.env.GLIBC_TUNABLES ?? '');
}

/** One line for a result file's header. */
export function hugePageNote(): string {
  const mode = transparentHugePages();
  if (mode === undefined) return 'transparent huge pages: not reported (not Linux)';
  const advised = mallocAdvisesHugePages();
  const gets = mode === 'always' || (mode === 'madvise' && advised) ? '2 MiB pages' : '4 KiB pages';
  return `transparent huge pages \`${mode}\`; this process ${advised ? 'started with' : 'without'} \`GLIBC_TUNABLES=glibc.malloc.hugetlb=1\`: fresh typed arrays get ${gets}`;
}
