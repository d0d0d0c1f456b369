/**
 * Why each corpus kernel is not at Numba's speed, read from a bench/corpus.ts result file (issue
 * 20's "says per kernel by how much and why not"): per kernel and target, the ratio to Numba as
 * users call both (ordinary arrays, output allocated by the call) and the same call on
 * `sharedArray` operands into a given `out` — what the kernel's code costs apart from ordinary
 * arrays. From the two:
 *
 * - "met": ≤ 1.0× Numba as users call it;
 * - "ordinary arrays": on `sharedArray` the kernel is at or under Numba's time, so the gap is what
 *   ordinary arrays cost — copies into and out of the Wasm memory (and, on `parallel`, the calling
 *   thread copying for the workers) and the fresh output's page faults (bench/fresh-output.ts);
 * - "kernel code": slower than Numba even on `sharedArray`; the row names the engine the library
 *   measured fastest and the `Math` functions the kernel calls (ported from V8's fdlibm, bit-identical
 *   to `Math.*`, where Numba's LLVM calls its own libm or vectorises them) — in Wasm SIMD a vector is
 *   128 bits: 2 float64, 4 float32, 8 int16 or 16 uint8 per instruction.
 *
 *   npx tsx bench/corpus-gaps.ts [bench/results/corpus-intel-xeon-16c.md ...]
 *
 * Writes bench/results/corpus-gaps-<machine>.md beside each input (machine from the input's name).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatRatio } from './lib/format.js';
import { markdownTable } from './lib/markdown.js';

const here = dirname(fileURLToPath(import.meta.url));
const inputs = process.argv.slice(2).length
  ? process.argv.slice(2)
  : ['corpus-intel-xeon-16c.md', 'corpus-intel-xeon-2c.md'].map((name) => join(here, 'results', name));

/** The `Math` functions (and `**`) each corpus kernel's source calls, by kernel name. */
function mathByKernel(): Map<string, string[]> {
  const source = readFileSync(join(here, 'corpus', 'kernels.ts'), 'utf8');
  const helpers = source.slice(0, source.indexOf('export const CORPUS'));
  const found = new Map<string, string[]>();
  const blocks = source.slice(source.indexOf('export const CORPUS')).split(/\n  \{\n    name: '/).slice(1);
  for (const block of blocks) {
    const name = block.slice(0, block.indexOf("'"));
    // The ufunc's kernel: makeUfunc's text, and the helpers it names through `env`.
    const make = block.slice(block.indexOf('makeUfunc'), block.indexOf('loop:'));
    let text = make;
    for (const [, helper] of make.matchAll(/env: \{ ([\w, ]+) \}/g)) {
      for (const h of helper!.split(',').map((s) => s.trim())) {
        const at = helpers.indexOf(`function ${h}(`);
        if (at >= 0) text += helpers.slice(at, helpers.indexOf('\n}\n', at));
      }
    }
    const calls = new Set([...text.matchAll(/Math\.(\w+)\(/g)].map((m) => m[1]!));
    if (/\*\*/.test(text)) calls.add('**');
    found.set(name, [...calls].sort());
  }
  return found;
}

const ms = (cell: string): number => {
  const [value, unit] = cell.trim().split(/\s+/);
  const scale = unit === 's' ? 1e3 : unit === 'ms' ? 1 : unit === 'µs' ? 1e-3 : NaN;
  return Number(value!.replace(/,/g, '')) * scale;
};
const times = (cell: string): number => Number(cell.trim().replace('×', ''));

interface Side {
  readonly asUsers: number; // time ÷ Numba's, ordinary arrays
  readonly shared: number; // the same call on sharedArray into a given out, ÷ Numba's
}

/** The `Math` functions the Wasm engine runs as ports of V8's fdlibm code (the others are single instructions). */
const FDLIBM = new Set(['exp', 'expm1', 'log', 'log1p', 'log2', 'log10', 'sinh', 'cosh', 'tanh', 'cbrt', 'pow', '**', 'hypot', 'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'atan2']);

/**
 * @param engine the cpu engine the library chose (the corpus's label), or undefined for `parallel`
 */
function verdict(side: Side, engine: string | undefined, math: readonly string[], target: 'cpu' | 'parallel'): string {
  if (side.asUsers <= 1) return 'met';
  if (side.shared <= 1) {
    const copies = target === 'parallel' ? 'the calling thread copying ordinary arrays for the workers' : 'copies through the Wasm memory';
    return `ordinary arrays: on sharedArray ${formatRatio(side.shared)} Numba; the rest is ${copies} and the fresh output's page faults`;
  }
  const parts = [`kernel code: ${formatRatio(side.shared)} Numba even on sharedArray`];
  if (engine === 'Wasm scalar') parts.push('runs scalar: its loop ends at different iterations per element (masked lanes measured slower)');
  else if (engine === 'JS') parts.push('the JS engine measured faster than Wasm');
  else if (engine !== undefined) parts.push(`${engine} (128-bit vectors)`);
  const ported = math.filter((f) => FDLIBM.has(f));
  if (ported.length) parts.push(`calls ${ported.join(', ')} (fdlibm ports, bit-identical to V8)`);
  if (side.asUsers / side.shared > 1.3) parts.push(`ordinary arrays add ${formatRatio(side.asUsers / side.shared)}`);
  return parts.join('; ');
}

const math = mathByKernel();
for (const file of inputs) {
  const lines = readFileSync(file, 'utf8').split('\n');
  const headerAt = lines.findIndex((l) => l.startsWith('| kernel') && l.includes('cpu ÷ Numba cpu'));
  if (headerAt < 0) throw new Error(`${file}: no corpus table (a line starting "| kernel" with "cpu ÷ Numba cpu") was found.`);
  const cells = (line: string) => line.split('|').slice(1, -1).map((c) => c.trim());
  const header = cells(lines[headerAt]!);
  const col = (name: string) => {
    const at = header.indexOf(name);
    if (at < 0) throw new Error(`${file}: the corpus table has no column "${name}"; its columns are ${header.join(', ')}.`);
    return at;
  };
  const rows: string[][] = [];
  let counted = { cpuMet: 0, cpuOrdinary: 0, parallelMet: 0, parallelOrdinary: 0, kernels: 0 };
  // Whether the engine chosen is the faster one forced (within 1.1×): the corpus's "chosen ÷ best"
  // also counts the same engine timed apart in turns, which on memory-bound calls is noise.
  const wrongEngine: string[] = [];
  for (const line of lines.slice(headerAt + 2)) {
    if (!line.startsWith('| ')) break;
    const c = cells(line);
    const name = c[col('kernel')]!;
    const numbaCpu = ms(c[col('Numba cpu')]!);
    const numbaParallel = ms(c[col('Numba parallel')]!);
    const cpu: Side = {
      asUsers: ms(c[col('cpu')]!) / numbaCpu,
      shared: ms(c[col('cpu')]!) / times(c[col('cpu: ordinary ÷ shared')]!) / numbaCpu,
    };
    const parallel: Side = {
      asUsers: ms(c[col('parallel')]!) / numbaParallel,
      shared: ms(c[col('parallel')]!) / times(c[col('parallel: ordinary ÷ shared')]!) / numbaParallel,
    };
    const engine = c[col('cpu engine')]!;
    const [js, wasm] = [ms(c[col('JS')]!), ms(c[col('Wasm')]!)];
    const chosenOverOther = engine === 'JS' ? js / wasm : wasm / js;
    if (chosenOverOther > 1.1) wrongEngine.push(`${name} (${formatRatio(chosenOverOther)})`);
    const used = math.get(name) ?? [];
    counted = {
      kernels: counted.kernels + 1,
      cpuMet: counted.cpuMet + (cpu.asUsers <= 1 ? 1 : 0),
      cpuOrdinary: counted.cpuOrdinary + (cpu.asUsers > 1 && cpu.shared <= 1 ? 1 : 0),
      parallelMet: counted.parallelMet + (parallel.asUsers <= 1 ? 1 : 0),
      parallelOrdinary: counted.parallelOrdinary + (parallel.asUsers > 1 && parallel.shared <= 1 ? 1 : 0),
    };
    rows.push([
      name, formatRatio(cpu.asUsers), formatRatio(cpu.shared), verdict(cpu, engine, used, 'cpu'),
      formatRatio(parallel.asUsers), formatRatio(parallel.shared), verdict(parallel, undefined, used, 'parallel'),
    ]);
  }
  const machine = basename(file).replace(/^corpus-/, '').replace(/\.md$/, '');
  const { kernels, cpuMet, cpuOrdinary, parallelMet, parallelOrdinary } = counted;
  const report = [
    `# Why corpus kernels are not at Numba's speed: ${machine}`,
    '',
    `\`npx tsx bench/corpus-gaps.ts ${basename(file)}\`, from ${basename(file)} (${lines.find((l) => l.startsWith('`npx tsx bench/corpus.ts'))?.replace(/`/g, '') ?? 'its run'}).`,
    '',
    "Per kernel and target: time ÷ Numba's as users call both (ordinary typed arrays, output allocated by the call), and the same call on `sharedArray` operands into a given `out` ÷ Numba's (what the kernel's code costs apart from ordinary arrays). How the verdicts are read: bench/corpus-gaps.ts.",
    '',
    `- cpu: ${cpuMet} of ${kernels} met; of the rest, ${cpuOrdinary} are at or under Numba's time on sharedArray (the gap is ordinary arrays), ${kernels - cpuMet - cpuOrdinary} are slower in their code.`,
    `- cpu engine: the one chosen is the faster of the two forced, or within 1.1× of it, on ${kernels - wrongEngine.length} of ${kernels}${wrongEngine.length ? ` (not: ${wrongEngine.join(', ')})` : ''}.`,
    `- parallel: ${parallelMet} of ${kernels} met; of the rest, ${parallelOrdinary} at or under Numba's time on sharedArray, ${kernels - parallelMet - parallelOrdinary} slower in their code.`,
    '',
    markdownTable(
      [
        { header: 'kernel' }, { header: 'cpu ÷ Numba', align: 'right' }, { header: 'on sharedArray', align: 'right' }, { header: 'cpu: why not' },
        { header: 'parallel ÷ Numba', align: 'right' }, { header: 'on sharedArray ', align: 'right' }, { header: 'parallel: why not' },
      ],
      rows,
    ),
    '',
  ].join('\n');
  const out = join(dirname(file), `corpus-gaps-${machine}.md`);
  writeFileSync(out, report);
  console.log(`${out}: cpu ${cpuMet}/${kernels} met, ${cpuOrdinary} ordinary-array gaps; parallel ${parallelMet}/${kernels} met, ${parallelOrdinary} ordinary-array gaps`);
}
