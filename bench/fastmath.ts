/**
 * Whether `fastmath: true` is ever slower than the default (issue 20: "fastmath is never slower
 * than the default"), judged per corpus kernel over repeated rounds rather than from one sample.
 *
 *   npx tsx bench/fastmath.ts [--quick] [--only a,b] [--rounds R] [--out FILE.md]
 *
 * Per kernel of the corpus (bench/corpus/kernels.ts), on the cpu target with ordinary typed
 * arrays as users call it: the default ufunc and the same kernel made with `fastmath: true`, each
 * calibrated by its first calls as a user's would be (in turns, until `explain` no longer calls its
 * engine a guess). Then R rounds (at least 3, the default), each of 3 samples of each ufunc in
 * alternation, the first of them alternating by round; a sample is a warm burst (an untimed call,
 * then at least 3 timed calls lasting ≥ 50 ms in all), timed as the calibration times its trials:
 * the lower of the wall time and the process's CPU time. The cpu target computes on the calling
 * thread; on a shared machine the wall clock also counts the time the thread waited for a core, and
 * on an idle 16-core one the process's CPU time also counts V8's helper threads (collecting the
 * calls' fresh outputs): the same code measured 0.82–2.53× itself by CPU time there.
 * Each pair of samples taken one after the other gives a ratio (fastmath ÷ default, under the same
 * load), each round the median of its pairs', and the verdict is on the median of the rounds'
 * (≤ 1.1×: not slower; one engine timed twice in one corpus run differed by up to 1.16× on the
 * 16-core host, so one sample cannot tell).
 *
 * "fastmath changes": whether the kernel computes a float32 `Math.exp` (the only thing the option
 * changes, passes/fastmath.ts); where it changes nothing, both ufuncs run the same code and share
 * one calibration (engine-calibration.ts), so they run the same engine by construction: their
 * verdict says so, and their measured ratio is the timing's own noise on this machine.
 *
 * Writes bench/results/fastmath-<machine>.md (`-quick` with --quick, `-partial` with --only).
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { shutdown } from '../src/index.js';
import { __testing as calibration } from '../src/targets/cpu/engine-calibration.js';
import { callArgument, makeInput } from './corpus/inputs.js';
import { CORPUS } from './corpus/kernels.js';
import { engineLabel } from './lib/engine.js';
import { formatRatio, formatSeconds } from './lib/format.js';
import { describeMachine, machineMarkdown, machineSlug } from './lib/machine.js';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';
import { mulberry32 } from '../tests/random.js';

const argv = process.argv.slice(2);
const flag = (name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const quick = argv.includes('--quick');
const only = flag('--only')?.split(',');
const rounds = Number(flag('--rounds') ?? 3);
if (!Number.isInteger(rounds) || rounds < 3) throw new Error(`--rounds: an integer of at least 3, found ${flag('--rounds')}`);
const SAMPLES_PER_ROUND = 3;
const MIN_CALLS_PER_SAMPLE = 3;
const MIN_SAMPLE_SECONDS = 0.05;
const MAX_CALIBRATING_CALLS = 40;
/** The verdict's bound: fastmath's time ÷ the default's, the median over rounds. */
const BOUND = 1.1;

type Ufunc = ((...args: unknown[]) => Promise<unknown>) & { explain: (...args: unknown[]) => string };
const kernels = CORPUS.filter((k) => !only || only.includes(k.name));
if (only && kernels.length !== only.length) throw new Error(`--only: unknown kernel(s) ${only.filter((n) => !CORPUS.some((k) => k.name === n)).join(', ')}`);

const guessing = (f: Ufunc, args: unknown[]) => /A guess until measured/.test(f.explain(...args));

/** Seconds of the process's CPU time. */
const cpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/** A warm burst: one untimed call, then `calls` timed; seconds per call, the lower of wall and CPU time. */
async function burst(f: Ufunc, args: unknown[], calls: number): Promise<number> {
  await f(...args);
  const cpu = cpuSeconds();
  const wall = performance.now();
  for (let i = 0; i < calls; i++) await f(...args);
  return Math.min((performance.now() - wall) / 1000, cpuSeconds() - cpu) / calls;
}

interface Row {
  readonly name: string;
  readonly changes: boolean;
  readonly shared: boolean;
  readonly engines: readonly [string, string];
  readonly medians: readonly [number, number];
  readonly ratios: readonly number[];
}

const started = performance.now();
const rows: Row[] = [];
for (const k of kernels) {
  calibration.forgetCalibrations(); // both ufuncs calibrate as users' first calls do
  const next = mulberry32(7);
  const size = Math.max(1, Math.round(quick ? k.fullSize / 16 : k.fullSize));
  const args = k.inputs(size).map((r) => callArgument(makeInput(r, next) as never));
  const ufuncs = [k.makeUfunc('cpu') as unknown as Ufunc, k.makeUfunc('cpu', { fastmath: true }) as unknown as Ufunc] as const;
  for (let call = 0; call < MAX_CALIBRATING_CALLS && ufuncs.some((f) => guessing(f, args)); call++) {
    for (const f of ufuncs) if (guessing(f, args)) await f(...args);
  }
  const explained = ufuncs.map((f) => f.explain(...args));
  const figures = explained.map((e) => /chosen by measurement: (.*?)\. The guess/.exec(e)?.[1]);
  const times = ufuncs.map((): number[][] => []);
  const ratios: number[] = [];
  const once = await burst(ufuncs[0], args, 1);
  const calls = Math.max(MIN_CALLS_PER_SAMPLE, Math.ceil(MIN_SAMPLE_SECONDS / Math.max(once, 1e-6)));
  for (let r = 0; r < rounds; r++) {
    const samples = ufuncs.map((): number[] => []);
    for (let s = 0; s < SAMPLES_PER_ROUND; s++) {
      for (const i of r % 2 === 0 ? [0, 1] : [1, 0]) samples[i]!.push(await burst(ufuncs[i]!, args, calls));
    }
    samples.forEach((x, i) => times[i]!.push(x));
    ratios.push(median(samples[1]!.map((f, s) => f / samples[0]![s]!)));
  }
  const row: Row = {
    name: k.name,
    changes: !/fastmath is on but changes nothing/.test(explained[1]!),
    shared: figures[0] !== undefined && figures[0] === figures[1],
    engines: [engineLabel(explained[0]!), engineLabel(explained[1]!)],
    medians: [median(times[0]!.flat()), median(times[1]!.flat())],
    ratios,
  };
  rows.push(row);
  process.stderr.write(`${k.name}: default ${row.engines[0]} ${formatSeconds(row.medians[0])}, fastmath ${row.engines[1]} ${formatSeconds(row.medians[1])}; rounds ${ratios.map(formatRatio).join(' ')}, median ${formatRatio(median(ratios))}\n`);
}

const within = rows.filter((r) => r.shared || median(r.ratios) <= BOUND);
const measured = rows.filter((r) => !r.shared);
const verdict = (r: Row) => (r.shared ? 'same code and engine' : median(r.ratios) <= BOUND ? 'not slower' : 'SLOWER');
const machine = describeMachine({ summary: 'not used by this benchmark' });
const table = markdownTable(
  [{ header: 'kernel' }, { header: 'fastmath changes' }, { header: 'one calibration' }, { header: 'default engine' }, { header: 'fastmath engine' }, { header: 'default', align: 'right' }, { header: 'fastmath', align: 'right' }, { header: 'fastmath ÷ default, per round' }, { header: 'median', align: 'right' }, { header: 'verdict' }],
  rows.map((r) => [r.name, r.changes ? 'float32 exp' : 'nothing', r.shared ? 'shared' : 'apart', r.engines[0], r.engines[1], formatSeconds(r.medians[0]), formatSeconds(r.medians[1]), r.ratios.map(formatRatio).join(' '), formatRatio(median(r.ratios)), verdict(r)]),
);
const report = [
  `# fastmath ÷ default on the cpu target, per corpus kernel${quick ? ' (quick run: sizes ÷ 16)' : ''}`,
  '',
  `\`npx tsx bench/fastmath.ts ${argv.join(' ')}\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${((performance.now() - started) / 1000).toFixed(0)} s`,
  '',
  machineMarkdown(machine),
  '',
  `Each kernel: the default ufunc and the same kernel with \`fastmath: true\`, calibrated by their first calls (ordinary typed arrays), then ${rounds} rounds of ${SAMPLES_PER_ROUND} warm bursts each (an untimed call, then at least ${MIN_CALLS_PER_SAMPLE} timed, ≥ ${MIN_SAMPLE_SECONDS * 1e3} ms in all, the lower of wall and process CPU time), the two in alternation; per round, the median of fastmath ÷ default over its pairs of bursts taken one after the other. Verdict on the median of the rounds: "not slower" at ≤ ${BOUND}×. "one calibration: shared": fastmath changes nothing, both ufuncs run the same code and share its calibration (engine-calibration.ts), so the same engine: "same code and engine", and their ratio is this machine's timing noise. "default", "fastmath": medians over every sample.`,
  '',
  `- ${within.length} of ${rows.length} kernels: fastmath not slower than the default — ${rows.length - measured.length} by construction (same code and engine), ${within.length - (rows.length - measured.length)} of ${measured.length} where it changes the code by measurement (median of ${rounds} rounds ≤ ${BOUND}×; worst ${measured.length ? formatRatio(Math.max(...measured.map((r) => median(r.ratios)))) : '—'})`,
  `- the timing's noise, from the kernels whose two ufuncs run the same code: median ratios ${rows.length > measured.length ? `${formatRatio(Math.min(...rows.filter((r) => r.shared).map((r) => median(r.ratios))))}–${formatRatio(Math.max(...rows.filter((r) => r.shared).map((r) => median(r.ratios))))}` : '—'}`,
  '',
  table,
  '',
].join('\n');
console.log(report);
const out = flag('--out') ?? fileURLToPath(new URL(`./results/fastmath-${machineSlug(machine)}${quick ? '-quick' : only ? '-partial' : ''}.md`, import.meta.url));
writeFileSync(out, report);
await shutdown();
