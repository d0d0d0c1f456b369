/**
 * Turns a benchmark run into bench/results/<machine>.md (+ .json of the raw numbers, .svg of the
 * throughput per workload, -scaling.svg of the sweep) and bench/results/latest.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { formatCount, formatRate, formatRatio, formatSeconds, formatSize } from './lib/format.js';
import { machineMarkdown, machineSlug } from './lib/machine.js';
import { markdownTable } from './lib/markdown.js';
import { barChartSvg, lineChartSvg } from './lib/svg.js';
import { type BenchRun, CONTENDERS, isPeer, type Measurement, type ScalingPoint, type ScalingSeries } from './results-model.js';
import { bytesMoved, type FloatType, type Workload, workloadNamed } from './workloads.js';

const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));
const CONTENDER_ORDER = CONTENDERS.map((c) => c.name);

const isTrustworthy = (m: { check: string }): boolean => m.check === 'ok' || m.check === 'reference';

function bytesOf(m: Measurement): number {
  return bytesMoved(workloadNamed(m.workload), m.size, m.dtype as FloatType);
}

/** The fastest peer with a correct result; the yardstick of the "vs best peer" column. */
function bestPeer(measurements: readonly Measurement[]): Measurement | undefined {
  return measurements
    .filter((m) => isPeer(m.contender) && isTrustworthy(m))
    .reduce<Measurement | undefined>((best, m) => (!best || m.medianSeconds < best.medianSeconds ? m : best), undefined);
}

function workloadSection(run: BenchRun, workload: Workload): string {
  const rows = run.measurements
    .filter((m) => m.workload === workload.name)
    .sort((a, b) => CONTENDER_ORDER.indexOf(a.contender) - CONTENDER_ORDER.indexOf(b.contender));
  if (rows.length === 0) return '';
  const best = bestPeer(rows);
  const size = rows[0].size;
  // The issue-10 yardstick: cpu against Numba's cpu target, parallel against Numba's parallel one.
  const numba = (contender: string) => rows.find((m) => m.contender === `Numba ${contender}` && isTrustworthy(m));
  const numbaRatio = (m: Measurement) => {
    const peer = m.contender === 'cpu' || m.contender === 'parallel' ? numba(m.contender) : undefined;
    return peer ? `${formatRatio(m.medianSeconds / peer.medianSeconds)} (${peer.contender})` : '';
  };
  const table = markdownTable(
    [
      { header: 'contender' },
      { header: 'engine' },
      { header: 'dtype' },
      { header: 'median', align: 'right' },
      { header: 'GB/s', align: 'right' },
      { header: 'elements/s', align: 'right' },
      { header: 'time ÷ best peer', align: 'right' },
      { header: 'time ÷ Numba', align: 'right' },
      { header: 'compile', align: 'right' },
      { header: 'first call', align: 'right' },
      { header: 'check' },
    ],
    rows.map((m) => [
      m === best ? `${m.contender} (best peer)` : m.contender,
      m.engine ?? '',
      m.dtype,
      formatSeconds(m.medianSeconds),
      (bytesOf(m) / m.medianSeconds / 1e9).toFixed(2),
      formatRate((m.size * workload.valuesPerItem) / m.medianSeconds, '/s'),
      best ? formatRatio(m.medianSeconds / best.medianSeconds) : '—',
      numbaRatio(m),
      m.compileSeconds === undefined ? '' : formatSeconds(m.compileSeconds),
      m.firstCallSeconds === undefined ? '' : formatSeconds(m.firstCallSeconds),
      m.check,
    ]),
  );
  return [
    `## ${workload.title}`,
    '',
    `${formatCount(size)} ${workload.items} per call; \`${workload.declaration}\``,
    '',
    table,
  ].join('\n');
}

function transfersSection(run: BenchRun): string {
  if (run.transfers.length === 0) return '';
  const keys = [...new Set(run.transfers.map((t) => `${t.workload}\u0000${t.contender}`))];
  const rate = (workload: string, contender: string, direction: string): string => {
    const t = run.transfers.find((x) => x.workload === workload && x.contender === contender && x.direction === direction);
    return t ? `${formatSeconds(t.seconds)} (${formatRate(t.bytes / t.seconds, 'B/s')})` : '—';
  };
  return [
    '## GPU transfers',
    '',
    'Copies of the inputs to the device (`toDevice`; CuPy `ndarray.set`) and of the output back (`toHost()`; CuPy `get`), from and into ordinary host memory, timed apart from the kernels. `gpu + transfers` and `CuPy + transfers` above include them.',
    '',
    markdownTable(
      [{ header: 'workload' }, { header: 'contender' }, { header: 'host→device', align: 'right' }, { header: 'device→host', align: 'right' }],
      keys.map((key) => {
        const [workload, contender] = key.split('\u0000') as [string, string];
        return [workload, contender, rate(workload, contender, 'host→device'), rate(workload, contender, 'device→host')];
      }),
    ),
  ].join('\n');
}

interface Crossover {
  readonly workload: ScalingPoint['workload'];
  readonly series: ScalingSeries;
  /** The smallest size from which on the series beats cpu at every larger size measured. */
  readonly elements: number | undefined;
}

/**
 * "Beats cpu" means taking less than this share of cpu's time. Below its threshold the parallel
 * target runs the cpu target's loop on the calling thread, and two equal loops must not count as
 * a crossover because of a few percent of noise.
 */
const CROSSOVER_TIME_SHARE = 0.9;

/**
 * Where each series starts to beat `cpu`: the smallest size from which on it beats cpu at every
 * size measured, so that one lucky sample among slower sizes does not count as a crossover.
 */
function crossovers(points: readonly ScalingPoint[]): Crossover[] {
  const result: Crossover[] = [];
  for (const workload of ['saxpy', 'hermite'] as const) {
    const cpu = new Map(points.filter((p) => p.workload === workload && p.series === 'cpu').map((p) => [p.elements, p.medianSeconds]));
    for (const series of ['parallel', 'gpu', 'gpu + transfers'] as const) {
      const mine = points
        .filter((p) => p.workload === workload && p.series === series && cpu.has(p.elements) && isTrustworthy(p))
        .sort((a, b) => a.elements - b.elements);
      if (mine.length === 0) continue;
      let from: number | undefined;
      for (const p of mine) {
        if (p.medianSeconds < CROSSOVER_TIME_SHARE * cpu.get(p.elements)!) from ??= p.elements;
        else from = undefined;
      }
      result.push({ workload, series, elements: from });
    }
  }
  return result;
}

function describeCrossover(c: Crossover, sizes: readonly number[]): string {
  if (c.elements === undefined) return `not up to ${formatSize(Math.max(...sizes))}`;
  return c.elements === Math.min(...sizes) ? `${formatSize(c.elements)} (already at the smallest size)` : `${formatSize(c.elements)} (${formatCount(c.elements)})`;
}

function scalingSection(run: BenchRun, slug: string): string {
  if (run.scaling.length === 0) return '';
  const sizes = [...new Set(run.scaling.map((p) => p.elements))].sort((a, b) => a - b);
  const series = [...new Set(run.scaling.map((p) => p.series))];
  const sweepTable = (workload: ScalingPoint['workload']): string =>
    markdownTable(
      [{ header: 'elements' }, ...series.map((s) => ({ header: `${s} GB/s`, align: 'right' as const }))],
      sizes.map((elements) => [
        formatSize(elements),
        ...series.map((s) => {
          const p = run.scaling.find((x) => x.workload === workload && x.series === s && x.elements === elements);
          if (!p) return '—';
          return isTrustworthy(p) ? (p.bytes / p.medianSeconds / 1e9).toFixed(2) : 'WRONG';
        }),
      ]),
    );
  const crossoverTable = markdownTable(
    [{ header: 'workload' }, { header: 'series' }, { header: 'beats cpu from' }],
    crossovers(run.scaling).map((c) => [c.workload, c.series, describeCrossover(c, sizes)]),
  );
  return [
    '## Scaling',
    '',
    `Throughput against size, ${formatSize(sizes[0])}…${formatSize(sizes.at(-1)!)} output elements (Hermite: rows = elements / 16); \`parallel\` on shared memory, \`gpu\` on device arrays, \`gpu + transfers\` on host arrays. A target *beats cpu* from the smallest size where it takes less than ${CROSSOVER_TIME_SHARE * 100}% of cpu's time, there and at every larger size.`,
    '',
    `![throughput against size](${slug}-scaling.svg)`,
    '',
    crossoverTable,
    '',
    '### SAXPY',
    '',
    sweepTable('saxpy'),
    '',
    '### Hermite ()->(n)',
    '',
    sweepTable('hermite'),
  ].join('\n');
}

function pythonLine(run: BenchRun): string {
  const { numba, cupy } = run.python;
  const lines: string[] = [];
  if (numba) {
    const numbaPart = numba.numba ? `, Numba ${numba.numba} (${numba.threads} threads, ${numba.threadingLayer} threading layer)` : '';
    lines.push(`- Python peers: \`${numba.interpreter}\`, Python ${numba.python}, NumPy ${numba.numpy}${numbaPart}`);
  }
  if (cupy) lines.push(`- CuPy peer: \`${cupy.interpreter}\`, CuPy ${cupy.cupy} on ${cupy.device}`);
  return lines.join('\n');
}

function markdownReport(run: BenchRun, slug: string): string {
  const mode = run.quick
    ? `**quick mode**: every size ÷ 16 and a coarser scaling sweep (every other power of two up to 2^20); ${run.warmup} warm-up call and ${run.samples} samples per contender`
    : `full sizes; ${run.warmup} warm-up calls and ${run.samples} samples per contender`;
  const workloads = [...new Set(run.measurements.map((m) => m.workload))].map(workloadNamed);
  return [
    `# ufunc benchmarks: ${run.machine.cpuModel}, ${run.machine.cores} cores${run.machine.gpuName ? `, ${run.machine.gpuName}` : ''}`,
    '',
    `Run ${run.date} with \`${run.command}\`: ${mode}. Targets: ${run.targets.join(', ')}.`,
    '',
    machineMarkdown(run.machine),
    pythonLine(run),
    '',
    'How to read: *median* is the median wall-clock time of one call over the samples, after warm-up (a sample repeats short calls until it lasts 5 ms). ' +
      '*GB/s* counts the bytes of every declared input and output once (scalars not); *elements/s* counts output values. ' +
      '*time ÷ best peer* divides by the fastest correct peer (JS loop, NumPy, Numba, CuPy): below 1 is faster than every peer. ' +
      '*first call* is the call that compiles (ufunc: parse, type, generate code, start workers or the device; Numba: JIT; CuPy: NVRTC and load). ' +
      '`gpu` and `CuPy` work on arrays already on the device; `gpu` is timed per call by the host (submission included), `gpu kernel` is the same kernels on the GPU\'s clock (timestamp queries), as `CuPy` is timed with CUDA events; `+ transfers` take host arrays and give host arrays back. ' +
      'Every output is checked against the JS loop (Python peers: against NumPy in float64, and the Hermite seed table of SEEDS.md).',
    '',
    `![throughput per workload](${slug}.svg)`,
    '',
    ...workloads.flatMap((w) => [workloadSection(run, w), '']),
    transfersSection(run),
    '',
    scalingSection(run, slug),
    '',
    ...(run.notes.length > 0 ? ['## Notes', '', ...run.notes.map((n) => `- ${n}`), ''] : []),
  ]
    .join('\n')
    .replace(/\n{3,}/g, '\n\n');
}

function throughputChart(run: BenchRun): string {
  const trusted = run.measurements.filter(isTrustworthy);
  const present = new Set(trusted.map((m) => m.contender));
  const workloads = [...new Set(trusted.map((m) => m.workload))];
  return barChartSvg({
    title: `ufunc throughput: ${run.machine.cpuModel}, ${run.machine.cores} cores${run.machine.gpuName ? `, ${run.machine.gpuName}` : ''}`,
    subtitle: `bytes read + written per second, median of ${run.samples} samples${run.quick ? ', quick mode (sizes ÷ 16)' : ''}; log scale`,
    valueLabel: 'throughput',
    series: CONTENDERS.filter((c) => present.has(c.name)),
    groups: workloads.map((workload) => ({
      label: workload,
      values: Object.fromEntries(trusted.filter((m) => m.workload === workload).map((m) => [m.contender, bytesOf(m) / m.medianSeconds])),
    })),
    formatValue: (v) => formatRate(v, 'B/s'),
  });
}

function scalingChart(run: BenchRun): string {
  const trusted = run.scaling.filter(isTrustworthy);
  const present = new Set(trusted.map((p) => p.series));
  const found = crossovers(run.scaling);
  const panel = (workload: ScalingPoint['workload'], title: string) => ({
    title,
    points: Object.fromEntries(
      [...present].map((series) => [
        series,
        trusted.filter((p) => p.workload === workload && p.series === series).map((p) => [p.elements, p.bytes / p.medianSeconds] as const),
      ]),
    ),
    markers: found
      .filter((c) => c.workload === workload && c.elements !== undefined)
      .map((c) => ({
        x: c.elements!,
        label: `${c.series} > cpu from ${formatSize(c.elements!)}`,
        color: CONTENDERS.find((x) => x.name === c.series)!.color,
      })),
  });
  return lineChartSvg({
    title: 'Throughput against size',
    subtitle: `${run.machine.cpuModel}, ${run.machine.cores} cores${run.machine.gpuName ? `, ${run.machine.gpuName}` : ''}; dashed: where a target starts to beat cpu`,
    xLabel: 'output elements',
    yLabel: 'bytes read + written per second',
    series: CONTENDERS.filter((c) => present.has(c.name as ScalingSeries)),
    panels: [panel('saxpy', 'SAXPY (float32)'), panel('hermite', 'Hermite ()->(n), n = 16 (float32)')],
    formatY: (v) => formatRate(v, 'B/s'),
  });
}

/**
 * Writes the run's files. Quick runs and runs that leave something out get their own names
 * (`<machine>-quick.*`, `<machine>-partial.*`), so they never overwrite a complete run's numbers;
 * latest.md is whichever ran last.
 *
 * @param run everything the run measured
 * @returns the Markdown report and the paths written
 */
export function writeReport(run: BenchRun): { markdown: string; files: string[] } {
  const slug = machineSlug(run.machine) + (run.quick ? '-quick' : '') + (run.partial ? '-partial' : '');
  mkdirSync(RESULTS_DIR, { recursive: true });
  const markdown = markdownReport(run, slug);
  const files: [string, string][] = [
    [`${slug}.md`, markdown],
    [`${slug}.json`, `${JSON.stringify({ ...run, crossovers: crossovers(run.scaling) }, null, 2)}\n`],
    [`${slug}.svg`, throughputChart(run)],
    ['latest.md', markdown],
  ];
  if (run.scaling.length > 0) files.push([`${slug}-scaling.svg`, scalingChart(run)]);
  for (const [name, content] of files) writeFileSync(RESULTS_DIR + name, content);
  return { markdown, files: files.map(([name]) => `bench/results/${name}`) };
}
