/**
 * Compile time of every corpus kernel (bench/corpus/kernels.ts), per cpu engine: the wall time of
 * a new ufunc's first call on a small input (parse, type, code generation and, for the Wasm
 * engine, `WebAssembly.Module` compilation), in one process whose library is already warm (a
 * first kernel outside the list pays the one-time start-up, reported apart):
 *
 *   npx tsx bench/compile-time.ts [--only a,b] [--repeats N]
 *
 * Each kernel is defined anew for each engine and repeat (ufuncs keep their compiled code per
 * object, so every first call compiles); the report gives the median over repeats and the worst.
 * A later call on the same ufunc and size is timed too, so "compile" is first call minus it.
 *
 * V8 compiles a Wasm module with its baseline compiler first and optimises it in the background, so
 * the first call pays the baseline compile only. Goal (issue 20): compile ≤ 50 ms per kernel.
 */
import { setEngineMode, shutdown, vectorize } from '../src/index.js';
import { formatSeconds } from './lib/format.js';
import { describeMachine, machineMarkdown } from './lib/machine.js';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';
import { mulberry32 } from '../tests/random.js';
import { CORPUS } from './corpus/kernels.js';
import { callArgument, makeInput } from './corpus/inputs.js';

const args = process.argv.slice(2);
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const only = flag('--only')?.split(',');
const repeats = Number(flag('--repeats') ?? 5);
const kernels = CORPUS.filter((k) => !only || only.includes(k.name));
for (const name of only ?? []) if (!CORPUS.some((k) => k.name === name)) throw new Error(`No corpus kernel named ${name}; the kernels are ${CORPUS.map((k) => k.name).join(', ')}.`);

const machine = describeMachine({ summary: 'not used by this benchmark' });
const began = performance.now();
// The library's one-time start-up (its own Wasm modules, the front's tables), outside any kernel.
const startup = performance.now();
const warm = vectorize(['float64(float64)'], { target: 'cpu' })((x: number) => x + 1);
for (const mode of ['js', 'wasm'] as const) {
  setEngineMode(mode);
  await warm(new Float64Array(64));
}
setEngineMode('auto');
const startupSeconds = (performance.now() - startup) / 1000;

/** A small call: 64 items, enough for every engine's loop, too few to time anything but compilation. */
const SMALL_ITEMS = 64;
const rows: string[][] = [];
let worst = 0;
for (const [i, kernel] of kernels.entries()) {
  const next = mulberry32(2000 + i);
  const callArgs = kernel.inputs(SMALL_ITEMS).map((r) => callArgument(makeInput(r, next)));
  const cells: string[] = [kernel.name, kernel.declaration];
  for (const mode of ['js', 'wasm'] as const) {
    const compile: number[] = [];
    for (let r = 0; r < repeats; r++) {
      const before = setEngineMode(mode);
      try {
        const f = kernel.makeUfunc('cpu');
        const t0 = performance.now();
        await f(...callArgs);
        const first = performance.now() - t0;
        const t1 = performance.now();
        await f(...callArgs);
        compile.push((first - (performance.now() - t1)) / 1000);
      } finally {
        setEngineMode(before);
      }
    }
    const most = Math.max(...compile);
    worst = Math.max(worst, most);
    cells.push(formatSeconds(median(compile)), formatSeconds(most));
  }
  rows.push(cells);
  process.stderr.write(`${kernel.name}: JS ${cells[2]} (worst ${cells[3]}), Wasm ${cells[4]} (worst ${cells[5]})\n`);
}
await shutdown();

const lines = [
  '# Compile time of the corpus kernels, per cpu engine',
  '',
  `\`npx tsx bench/compile-time.ts${args.length ? ' ' + args.join(' ') : ''}\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${((performance.now() - began) / 1000).toFixed(0)} s`,
  '',
  machineMarkdown(machine),
  '',
  `Each kernel defined anew and called once on ${SMALL_ITEMS} items with the engine forced (\`setEngineMode\`); "compile" is that first call's wall time minus a second call's; median of ${repeats} repeats and the worst. The library's one-time start-up, paid by a kernel outside the list before any of these: ${formatSeconds(startupSeconds)}. Goal (issue 20): ≤ 50 ms per kernel — worst here ${formatSeconds(worst)}.`,
  '',
  markdownTable([{ header: 'kernel' }, { header: 'declaration' }, ...['JS engine', 'JS worst', 'Wasm engine', 'Wasm worst'].map((header) => ({ header, align: 'right' as const }))], rows),
];
console.log(lines.join('\n'));
