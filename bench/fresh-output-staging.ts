/**
 * What a parallel call's fresh output costs the Wasm engine on the workers, staged cleared (now)
 * against copied in (as before b3f5495: `__testing.freshOutputsCleared(false)`), in one process:
 * awaited calls of a corpus kernel at full size, `sharedArray` inputs (nothing else is staged),
 * the output allocated by the call, the engine forced (Wasm by default), the two stagings
 * alternating call by call. Per staging: wall time per call (median and least) and, per call, the
 * process's minor page faults and system CPU time — counts that a loaded machine does not move,
 * where wall times do. Copying a fresh output in reads its untouched pages (each maps the shared
 * zero page); the copy back then takes a copy-on-write fault per page, whose TLB flush interrupts
 * every core running the process: one extra fault per 4 KiB page of the output per call.
 *
 *   npx tsx bench/fresh-output-staging.ts [--only a,b] [--calls N] [--engine wasm|js]
 */
import { callArgument, makeInput, sharedOperand } from './corpus/inputs.js';
import { CORPUS, type Operand } from './corpus/kernels.js';
import { formatSeconds } from './lib/format.js';
import { describeMachine, machineMarkdown } from './lib/machine.js';
import { markdownTable } from './lib/markdown.js';
import { mulberry32 } from '../tests/random.js';
import { setEngineMode, shutdown } from '../src/index.js';
import { __testing as parallelTesting } from '../src/targets/parallel/index.js';

const argv = process.argv.slice(2);
const flag = (name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const only = (flag('--only') ?? 'move-mean,add-scalar-rows,box-blur-rows,softmax').split(',');
const CALLS = Number(flag('--calls') ?? 20);
const engine = (flag('--engine') ?? 'wasm') as 'wasm' | 'js';

type Staging = 'cleared' | 'copied in';
const STAGINGS: readonly Staging[] = ['cleared', 'copied in'];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

parallelTesting.measuredPlacement(false);
setEngineMode(engine);
const rows: string[][] = [];
for (const k of CORPUS.filter((c) => only.includes(c.name))) {
  const next = mulberry32(7);
  const args = k.inputs(k.fullSize).map((r) => makeInput(r, next)).map(sharedOperand).map((o) => callArgument(o as Operand | number));
  const f = k.makeUfunc('parallel') as unknown as (...a: unknown[]) => Promise<unknown>;
  const seen = new Map<Staging, { wall: number[]; faults: number; systemSeconds: number }>(STAGINGS.map((s) => [s, { wall: [], faults: 0, systemSeconds: 0 }]));
  for (let call = 0; call < 2 * (CALLS + 1); call++) {
    const staging = STAGINGS[call % 2]!;
    parallelTesting.freshOutputsCleared(staging === 'cleared');
    const before = process.resourceUsage();
    const t = performance.now();
    await f(...args);
    const wall = (performance.now() - t) / 1000;
    const after = process.resourceUsage();
    if (call < 2) continue; // warm-up, one of each
    const s = seen.get(staging)!;
    s.wall.push(wall);
    s.faults += after.minorPageFault - before.minorPageFault;
    s.systemSeconds += (after.systemCPUTime - before.systemCPUTime) / 1e6;
  }
  parallelTesting.freshOutputsCleared(true);
  for (const staging of STAGINGS) {
    const s = seen.get(staging)!;
    const cells = [formatSeconds(median(s.wall)), formatSeconds(Math.min(...s.wall)), Math.round(s.faults / CALLS).toLocaleString('en-US'), formatSeconds(s.systemSeconds / CALLS)];
    rows.push([k.name, staging, ...cells]);
    process.stderr.write(`${k.name}, ${staging}: median ${cells[0]}, least ${cells[1]}, ${cells[2]} minor faults and ${cells[3]} system time per call\n`);
  }
}
console.log(
  [
    `# A parallel call's fresh output on the workers' ${engine === 'wasm' ? 'Wasm' : 'JS'} engine: staged cleared against copied in`,
    '',
    `\`npx tsx bench/fresh-output-staging.ts ${argv.join(' ')}\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    '',
    machineMarkdown(describeMachine({ summary: 'not used by this benchmark' })),
    '',
    `Awaited calls, \`sharedArray\` inputs, the output allocated by the call; the two stagings alternating call by call, ${CALLS} calls each after one of each to warm up. Faults and system time: the whole process's (every thread), per call.`,
    '',
    markdownTable([{ header: 'kernel' }, { header: 'fresh output staged' }, { header: 'wall, median', align: 'right' }, { header: 'wall, least', align: 'right' }, { header: 'minor faults', align: 'right' }, { header: 'system time', align: 'right' }], rows),
    '',
  ].join('\n'),
);
await shutdown();
