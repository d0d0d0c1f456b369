/**
 * Where the time of a call on ordinary typed arrays goes (issue 20, item 4), per corpus kernel and
 * target, against the same call with every array in shared (Wasm) memory:
 *
 *   npx tsx bench/ordinary-arrays.ts [--quick] [--sync] [--only poly5,saxpy-f64] [--targets cpu,parallel] [--engines auto,js,wasm] [--out FILE.md]
 *
 * With --sync every call is `f.sync(...)` (else awaited). With --engines, the cpu target's rows are
 * repeated per engine (`setEngineMode`; `auto` is the library's choice): the JS engine writes the
 * arrays where they lie, the Wasm engine copies ordinary ones through its memory block by block,
 * so the two split a call's time differently between copies, the kernel and the fresh output.
 * The header says whether this process's `malloc` asks for transparent huge pages
 * (`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`), which decides what a fresh output's pages cost
 * (bench/results/fresh-output-*.md).
 *
 * On the parallel target, more variants in the same turns: `ordinary → given` and
 * `ordinary → fresh` with the inputs copied whole before the workers start (as before
 * `CopyPipeline`, src/targets/parallel/staging.ts: the A/B of copying while the workers compute);
 * `SAB → fresh`, inputs each in a `SharedArrayBuffer` of its own (as a previous parallel call's
 * result is), and it and `ordinary → fresh` with the threads copying nothing in (as before
 * `StagedOperands.chunkCopies` took copies in: the A/B of the threads copying shared operands in
 * and per-row outputs in and back, on the Wasm engine).
 *
 * Five variants, timed in turns sample by sample (so that they see the same load), medians:
 * - `shared → given`: `sharedArray` inputs into a given `sharedArray` `out` (no copies, no output to make);
 * - `shared → fresh`: `sharedArray` inputs, the output allocated by the call (what the output costs);
 * - `ordinary → given`: ordinary inputs into a given ordinary `out` used before (what copies cost);
 * - `ordinary → fresh`: the call as users write it;
 * - `alloc + fill`: a fresh typed array of the output's size, every element written once — the
 *   price of new memory itself (page faults and the kernel's zeroing of the pages), without ufunc;
 * - `fill reused`: the same writes into an array of that size used before (no new memory).
 * - `inputs copied`: every ordinary input copied once, on this thread, into shared memory used
 *   before — the least a call on ordinary inputs that uses workers can cost: only the thread that
 *   owns an ordinary `ArrayBuffer` can read it, at one thread's memory bandwidth.
 *
 * Writes bench/results/ordinary-arrays-<machine>.md (`-quick` with --quick).
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ready, setEngineMode, sharedArray, shutdown } from '../src/index.js';
import { __testing as parallelTesting } from '../src/targets/parallel/index.js';
import { formatRatio, formatSeconds } from './lib/format.js';
import { describeMachine, machineMarkdown, machineSlug } from './lib/machine.js';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';
import { CORPUS, type Data, type Operand } from './corpus/kernels.js';
import { DTYPE_OF, makeInput } from './lib/corpus-inputs.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const sync = args.includes('--sync');
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const only = (flag('--only') ?? 'poly5,saxpy-f64,sigmoid,row-dot').split(',');
const targets = (flag('--targets') ?? 'cpu,parallel').split(',') as ('cpu' | 'parallel')[];
const engines = (flag('--engines') ?? 'auto').split(',') as ('auto' | 'js' | 'wasm')[];
const samples = quick ? 5 : 15;
const machine = describeMachine({ summary: 'not used by this benchmark' });
const outFile = flag('--out') ?? fileURLToPath(new URL(`./results/ordinary-arrays-${machineSlug(machine)}${sync ? "-sync" : ""}${quick ? "-quick" : ""}.md`, import.meta.url));

/** A copy in a `SharedArrayBuffer` of its own, outside the Wasm memory (as a parallel call's result is). */
const toSab = (data: Data): Data => {
  const Type = data.constructor as new (b: SharedArrayBuffer) => Data;
  const copy = new Type(new SharedArrayBuffer(data.byteLength));
  copy.set(data as never);
  return copy;
};
const toShared = (data: Data): Data => {
  const copy = sharedArray(data.length, DTYPE_OF.get(data.constructor)!) as Data;
  copy.set(data as never);
  return copy;
};
const argOf = (a: Operand | number) => (typeof a === 'number' ? a : a.shape.length === 1 ? a.data : { data: a.data, shape: a.shape });
const dataOf = (r: unknown): Data => (ArrayBuffer.isView(r) ? (r as Data) : (r as { data: Data }).data);
const outLike = (r: unknown, make: (d: Data) => Data) => (ArrayBuffer.isView(r) ? make(r as Data) : { data: make(dataOf(r)), shape: (r as { shape: number[] }).shape });

async function interleaved(calls: readonly (() => unknown)[]): Promise<number[]> {
  for (const call of calls) await call();
  const times = calls.map((): number[] => []);
  for (let s = 0; s < samples; s++) {
    for (const [k, call] of calls.entries()) {
      const start = performance.now();
      await call();
      times[k]!.push((performance.now() - start) / 1000);
    }
  }
  return times.map(median);
}

const rows: string[][] = [];
await ready();
for (const name of only) {
  const kernel = CORPUS.find((k) => k.name === name);
  if (!kernel) throw new Error(`No corpus kernel named ${name}.`);
  const size = Math.round(quick ? kernel.fullSize / 16 : kernel.fullSize);
  const operands = kernel.inputs(size).map((r, i) => makeInput(r, 7 + i));
  const ordinary = operands.map(argOf);
  const shared = operands.map((a) => (typeof a === 'number' ? a : argOf({ data: toShared(a.data), shape: a.shape })));
  const sab = operands.map((a) => (typeof a === 'number' ? a : argOf({ data: toSab(a.data), shape: a.shape })));
  const runs = targets.flatMap((t): ['cpu' | 'parallel', 'auto' | 'js' | 'wasm'][] => (t === 'cpu' ? engines.map((e) => [t, e]) : [[t, 'auto']]));
  for (const [target, engine] of runs) {
    setEngineMode(engine);
    const label = target === 'cpu' && engines.length > 1 ? `cpu, ${engine === 'auto' ? 'chosen' : engine === 'js' ? 'JS' : 'Wasm'}` : target;
    const ufunc = kernel.makeUfunc(target);
    const f = sync ? async (...a: Parameters<typeof ufunc.sync>) => ufunc.sync(...a) : ufunc;
    const first = await f(...ordinary);
    const sharedOut = outLike(first, toShared);
    const ordinaryOut = outLike(first, (d) => d.slice() as Data);
    const { constructor: Out, length } = dataOf(first) as Data & { constructor: new (n: number) => Data };
    const reused = new Out(length);
    const inputArrays = operands.filter((a): a is Operand => typeof a !== 'number').map((a) => a.data);
    const inputCopies = inputArrays.map(toSab);
    const copyInputs = async () => inputArrays.forEach((a, i) => inputCopies[i]!.set(a as never));
    for (let i = 0; i < 4; i++) await f(...shared, { out: sharedOut });
    // The call with one of the parallel target's A/B settings off.
    const without = (setting: (on: boolean) => boolean) => (call: () => Promise<unknown>) => async () => {
      const was = setting(false);
      try {
        await call();
      } finally {
        setting(was);
      }
    };
    const copiedFirst = without(parallelTesting.pipelineCopies);
    const noThreadCopiesIn = without(parallelTesting.threadCopiesIn);
    const [sharedGiven, sharedFresh, ordinaryGiven, ordinaryFresh, alloc, refill, inputsCopied, givenCopiedFirst, freshCopiedFirst, sabFresh, sabFreshNoThreadCopies, freshNoThreadCopies] = await interleaved([
      () => f(...shared, { out: sharedOut }),
      () => f(...shared),
      () => f(...ordinary, { out: ordinaryOut }),
      () => f(...ordinary),
      () => new Out(length).fill(1),
      () => reused.fill(1),
      copyInputs,
      ...(target === 'parallel'
        ? [copiedFirst(() => f(...ordinary, { out: ordinaryOut })), copiedFirst(() => f(...ordinary)), () => f(...sab), noThreadCopiesIn(() => f(...sab)), noThreadCopiesIn(() => f(...ordinary))]
        : []),
    ]);
    const ab = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? '—' : `${formatSeconds(a)} (${formatRatio(b / a)})`);
    rows.push([
      name, label, formatSeconds(sharedGiven!), formatSeconds(sharedFresh!), formatSeconds(ordinaryGiven!), formatSeconds(ordinaryFresh!), formatSeconds(alloc!), formatSeconds(refill!), formatSeconds(inputsCopied!),
      ab(givenCopiedFirst, ordinaryGiven), ab(freshCopiedFirst, ordinaryFresh), formatRatio(ordinaryFresh! / sharedGiven!),
      sabFresh === undefined ? '—' : formatSeconds(sabFresh), ab(sabFreshNoThreadCopies, sabFresh), ab(freshNoThreadCopies, ordinaryFresh),
    ]);
    process.stderr.write(`| ${rows.at(-1)!.join(' | ')} |\n`); // as it goes: the table follows at the end
  }
  setEngineMode('auto');
}
await shutdown();
const right = (header: string) => ({ header, align: 'right' as const });
const table = markdownTable(
  [{ header: 'kernel' }, { header: 'target' }, right('shared → given'), right('shared → fresh'), right('ordinary → given'), right('ordinary → fresh'), right('alloc + fill'), right('fill reused'), right('inputs copied'), right('ordinary → given, copied first (now ÷ it)'), right('ordinary → fresh, copied first (now ÷ it)'), right('ordinary fresh ÷ shared given'), right('SAB → fresh'), right('SAB → fresh, no thread copies in (now ÷ it)'), right('ordinary → fresh, no thread copies in (now ÷ it)')],
  rows,
);
console.log(table);
const command = `npx tsx bench/ordinary-arrays.ts ${args.join(' ')}`.trim();
writeFileSync(outFile, [
  '# Where the time of a call on ordinary arrays goes',
  '',
  `\`${command}\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${samples} samples per variant, taken in turns; medians`,
  '',
  machineMarkdown(machine),
  '',
  'shared: `sharedArray` inputs; ordinary: ordinary typed arrays. given: into an `out` used before; fresh: the output allocated by the call. "alloc + fill" and "fill reused": a typed array of the output\'s size written once, new or used before (no ufunc). "inputs copied": the ordinary inputs copied once on the calling thread into shared memory used before — the floor of a parallel call on ordinary inputs (only the thread that owns an ordinary `ArrayBuffer` can read it). "copied first": the parallel call with its inputs copied whole before the workers start, and in brackets the call as it is now ÷ that (below 1: faster now). SAB: inputs each in a `SharedArrayBuffer` of its own, outside the Wasm memory (as a parallel call\'s result is). "no thread copies in": the threads copy no staged operand in (the calling thread does), and per-row outputs are copied back by the calling thread.',
  '',
  table,
  '',
].join('\n'));
