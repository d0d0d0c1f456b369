/**
 * A/B of awaited parallel calls on ordinary arrays (issue 20, item 4): how far each is from the same
 * call on `sharedArray`, on this checkout and on a base (or on this checkout with its pipeline's
 * parts switched off), in one process, timed in turns sample by sample so that every side sees the
 * same load:
 *
 *   git archive main src bench/corpus package.json tsconfig.json | (mkdir -p /tmp/base && tar -x -C /tmp/base)
 *   ln -s $PWD/node_modules /tmp/base/node_modules
 *   npx tsx bench/ordinary-ab.ts --base /tmp/base [--only saxpy-f64,relu] [--rounds 15] [--quick] [--out FILE.md]
 *   npx tsx bench/ordinary-ab.ts             # no base: this checkout against its own switches
 *
 * Without a base the sides are this checkout as it is (`new`); `before`: every sleeping thread
 * woken at each chunk the input pipeline opens (src/targets/parallel/pool.ts `wakeEverySleeper`),
 * as before sleepers claimed only open chunks; `copied first`: the inputs copied whole before the
 * workers start (no pipeline at all); `results early`: results into an ordinary `out` copied back
 * chunk by chunk while later chunks run (index.ts `pipelineResults`, off by default).
 *
 * Per kernel and side: `shared`: `sharedArray` inputs into a `sharedArray` `out` (no copies);
 * `given`: ordinary inputs into an ordinary `out` used before; `fresh`: ordinary inputs, the output
 * allocated by the call. Medians; the table gives each ordinary call ÷ its side's `shared`, and
 * each side ÷ the first side.
 *
 * Writes bench/results/ordinary-ab-<machine>.md (`-quick` with --quick).
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { formatRatio, formatSeconds } from './lib/format.js';
import { describeMachine, machineMarkdown, machineSlug } from './lib/machine.js';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';
import type { CorpusKernel, Data, Operand } from './corpus/kernels.js';
import { DTYPE_OF, makeInput } from './lib/corpus-inputs.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const only = (flag('--only') ?? 'saxpy-f64,relu,elu,row-dot,add-scalar-rows,sigmoid,poly5').split(',');
const rounds = Number(flag('--rounds') ?? (quick ? 5 : 15));
const baseDir = flag('--base');
const machine = describeMachine({ summary: 'not used by this benchmark' });
const outFile = flag('--out') ?? fileURLToPath(new URL(`./results/ordinary-ab-${machineSlug(machine)}${quick ? '-quick' : ''}.md`, import.meta.url));

/** What this benchmark uses of a checkout of the library. */
interface Library {
  readonly sharedArray: (n: number, dtype: string) => unknown;
  readonly ready: () => Promise<void>;
  readonly shutdown: () => Promise<void>;
  readonly corpus: readonly CorpusKernel[];
  /** The parallel target's A/B switches (`__testing`): each takes the new setting, returns the old. */
  readonly switches: Record<string, ((on: boolean) => boolean) | undefined>;
}

async function load(dir: string): Promise<Library> {
  const at = (path: string) => import(pathToFileURL(resolve(dir, path)).href);
  const [index, parallel, kernels] = await Promise.all([at('src/index.ts'), at('src/targets/parallel/index.ts'), at('bench/corpus/kernels.ts')]);
  return { sharedArray: index.sharedArray, ready: index.ready, shutdown: index.shutdown, corpus: kernels.CORPUS, switches: parallel.__testing };
}

/** A side: a library, and the switches set for its calls. */
interface Side {
  readonly name: string;
  readonly lib: Library;
  readonly settings: Readonly<Record<string, boolean>>;
}

const here = await load(fileURLToPath(new URL('..', import.meta.url)));
const sides: Side[] = baseDir
  ? [{ name: 'base', lib: await load(baseDir), settings: {} }, { name: 'new', lib: here, settings: {} }]
  : [
      { name: 'before', lib: here, settings: { wakeEverySleeper: true } },
      { name: 'copied first', lib: here, settings: { pipelineCopies: false } },
      { name: 'results early', lib: here, settings: { pipelineResults: true } },
      { name: 'new', lib: here, settings: {} },
    ];

/** Runs `call` with the side's switches set, and sets them back after. */
async function withSide(side: Side, call: () => unknown): Promise<void> {
  const restore: (() => void)[] = [];
  for (const [name, on] of Object.entries(side.settings)) {
    const set = side.lib.switches[name];
    if (!set) throw new Error(`${side.name}: this checkout has no switch ${name}`);
    const was = set(on);
    restore.push(() => set(was));
  }
  try {
    await call();
  } finally {
    for (const undo of restore) undo();
  }
}

const argOf = (a: Operand | number) => (typeof a === 'number' ? a : a.shape.length === 1 ? a.data : { data: a.data, shape: a.shape });
const dataOf = (r: unknown): Data => (ArrayBuffer.isView(r) ? (r as Data) : (r as { data: Data }).data);
const outLike = (r: unknown, make: (d: Data) => Data) => (ArrayBuffer.isView(r) ? make(r as Data) : { data: make(dataOf(r)), shape: (r as { shape: number[] }).shape });

const KINDS = ['shared', 'given', 'fresh'] as const;
const rows: string[][] = [];
for (const lib of new Set(sides.map((s) => s.lib))) await lib.ready();
for (const name of only) {
  // Per side: its three calls on the kernel as that side's library makes it.
  const calls: { side: Side; kind: (typeof KINDS)[number]; run: () => Promise<void> }[] = [];
  for (const side of sides) {
    const kernel = side.lib.corpus.find((k) => k.name === name);
    if (!kernel) throw new Error(`No corpus kernel named ${name} in ${side.name}.`);
    const size = Math.round(quick ? kernel.fullSize / 16 : kernel.fullSize);
    const operands = kernel.inputs(size).map((r, i) => makeInput(r, 7 + i));
    const toShared = (data: Data): Data => {
      const copy = side.lib.sharedArray(data.length, DTYPE_OF.get(data.constructor)!) as Data;
      copy.set(data as never);
      return copy;
    };
    const ordinary = operands.map(argOf);
    const shared = operands.map((a) => (typeof a === 'number' ? a : argOf({ data: toShared(a.data), shape: a.shape })));
    const f = kernel.makeUfunc('parallel') as unknown as (...a: unknown[]) => Promise<unknown>;
    const first = await f(...ordinary);
    const sharedOut = outLike(first, toShared);
    const ordinaryOut = outLike(first, (d) => d.slice() as Data);
    calls.push(
      { side, kind: 'shared', run: () => withSide(side, () => f(...shared, { out: sharedOut })) },
      { side, kind: 'given', run: () => withSide(side, () => f(...ordinary, { out: ordinaryOut })) },
      { side, kind: 'fresh', run: () => withSide(side, () => f(...ordinary)) },
    );
  }
  for (let warm = 0; warm < 4; warm++) for (const call of calls) await call.run();
  const times = calls.map((): number[] => []);
  for (let r = 0; r < rounds; r++) {
    for (const [k, call] of calls.entries()) {
      const start = performance.now();
      await call.run();
      times[k]!.push((performance.now() - start) / 1000);
    }
  }
  const medians = times.map(median);
  const of = (side: Side, kind: (typeof KINDS)[number]) => medians[calls.findIndex((c) => c.side === side && c.kind === kind)]!;
  for (const side of sides) {
    const vsFirst = (kind: (typeof KINDS)[number]) => (side === sides[0] ? '' : ` (${formatRatio(of(side, kind) / of(sides[0]!, kind))})`);
    rows.push([
      name, side.name, formatSeconds(of(side, 'shared')),
      `${formatSeconds(of(side, 'given'))}${vsFirst('given')}`, `${formatSeconds(of(side, 'fresh'))}${vsFirst('fresh')}`,
      formatRatio(of(side, 'given') / of(side, 'shared')), formatRatio(of(side, 'fresh') / of(side, 'shared')),
    ]);
    process.stderr.write(`| ${rows.at(-1)!.join(' | ')} |\n`); // as it goes: the table follows at the end
  }
}
for (const lib of new Set(sides.map((s) => s.lib))) await lib.shutdown();
const right = (header: string) => ({ header, align: 'right' as const });
const table = markdownTable(
  [{ header: 'kernel' }, { header: 'side' }, right('shared → shared out'), right(`ordinary → given out (÷ ${sides[0]!.name})`), right(`ordinary → fresh (÷ ${sides[0]!.name})`), right('given ÷ shared'), right('fresh ÷ shared')],
  rows,
);
console.log(table);
writeFileSync(outFile, [
  '# Awaited parallel calls on ordinary arrays against `sharedArray`: A/B',
  '',
  `\`npx tsx bench/ordinary-ab.ts ${args.join(' ')}\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${rounds} samples per call, taken in turns; medians. Sides: ${sides.map((s) => `${s.name}${Object.keys(s.settings).length ? ` (${Object.entries(s.settings).map(([k, v]) => `${k} ${v}`).join(', ')})` : ''}`).join('; ')}.`,
  '',
  machineMarkdown(machine),
  '',
  table,
  '',
].join('\n'));
