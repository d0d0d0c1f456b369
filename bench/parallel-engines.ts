/**
 * Where a parallel call's time goes, per engine the workers run: each form forced on the workers
 * (`setEngineMode`, and the Wasm variants as bench/engine-choice.ts forces them), awaited calls of
 * a corpus kernel at full size with (a) ordinary inputs and a fresh output, as users call it, (b)
 * `sharedArray` inputs (in the Wasm memory: the calling thread copies nothing in) and a fresh
 * output, (c) `sharedArray` inputs and a `sharedArray` output (nothing to copy for the Wasm engine
 * either way). Wall time per call, least of the samples, the forms and cases in turns, each round
 * starting one later (a collection every few calls then does not fall on one cell every round).
 * Where the Wasm engine loses in (a) but not in (c), the difference is staging and copying; where it loses in
 * (c) too, it is in the workers' code. Placement on the calling thread by measurement is off. The
 * Wasm engine is also timed with a fresh output copied into its staging arena rather than cleared
 * (`__testing.freshOutputsCleared(false)`, as before b3f5495): that change's A/B.
 *
 *   npx tsx bench/parallel-engines.ts [--only a,b] [--samples N] [--workers N,M,…]
 *
 * `--workers`: the same for each pool size in turn (`setParallelOptions({ workers })`): whether a
 * form's time scales with the workers or something in it contends.
 */
import { callArgument, makeInput, sharedOperand } from './corpus/inputs.js';
import { CORPUS, type Operand } from './corpus/kernels.js';
import { formatRatio, formatSeconds } from './lib/format.js';
import { describeMachine, machineMarkdown } from './lib/machine.js';
import { markdownTable } from './lib/markdown.js';
import { mulberry32 } from '../tests/random.js';
import { getParallelOptions, setEngineMode, setParallelOptions, shutdown } from '../src/index.js';
import { __testing as parallelTesting } from '../src/targets/parallel/index.js';
import { __testing as rowsTesting } from '../src/targets/cpu/wasm/emit-rows.js';

const argv = process.argv.slice(2);
const flag = (name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const only = (flag('--only') ?? 'softmax,move-mean,log-returns,box-blur-rows,row-dot,sigmoid').split(',');
const SAMPLES = Number(flag('--samples') ?? 7);
const POOL_SIZES = (flag('--workers') ?? String(getParallelOptions().workers)).split(',').map(Number);

type Case = 'ordinary' | 'shared in' | 'shared in, out';
const CASES: readonly Case[] = ['ordinary', 'shared in', 'shared in, out'];
/** 'wasm-copied-in': Wasm with a fresh output copied into the staging arena, as before b3f5495 (A/B). */
type Form = 'js' | 'wasm' | 'wasm-pairs' | 'wasm-copied-in';

type Ufunc = ((...args: unknown[]) => Promise<unknown>) & { explain: (...args: unknown[]) => string };
parallelTesting.measuredPlacement(false);
const rows: string[][] = [];
for (const k of CORPUS.filter((c) => only.includes(c.name))) {
  const next = mulberry32(7);
  const operands = k.inputs(k.fullSize).map((r) => makeInput(r, next));
  const ordinary = operands.map(callArgument);
  const inShared = operands.map(sharedOperand).map((o) => callArgument(o as Operand | number));
  // The output of a call, in a `sharedArray`, for case (c).
  const probe = (await (k.makeUfunc('parallel') as unknown as Ufunc)(...ordinary)) as { data?: ArrayLike<number>; shape?: number[] } & ArrayLike<number>;
  const outData = probe.data ?? probe;
  const out = sharedOperand({ data: outData as never, shape: probe.shape ?? [outData.length] }) as Operand;
  const outArg = probe.shape ? { data: out.data, shape: out.shape } : out.data;
  const f = k.makeUfunc('parallel') as unknown as Ufunc;
  setEngineMode('wasm');
  rowsTesting.setFloatPairs(true);
  const paired = k.makeUfunc('parallel') as unknown as Ufunc;
  const hasPairs = /float64 values in pairs/.test(paired.explain(...ordinary));
  rowsTesting.setFloatPairs(undefined);
  setEngineMode('auto');
  const forms: Form[] = hasPairs ? ['js', 'wasm', 'wasm-pairs', 'wasm-copied-in'] : ['js', 'wasm', 'wasm-copied-in'];
  for (const workers of POOL_SIZES) {
    setParallelOptions({ workers });
    const best = new Map<string, number>();
    // Each round starts one cell later: a collection every k calls (the fresh outputs' external
    // memory) then falls on different cells from round to round instead of on one cell every time.
    const cells = forms.flatMap((form) => CASES.map((c) => ({ form, c })));
    for (let s = 0; s <= SAMPLES; s++) {
      for (let j = 0; j < cells.length; j++) {
        const { form, c } = cells[(j + s) % cells.length]!;
        const args = c === 'ordinary' ? ordinary : inShared;
        setEngineMode(form === 'js' ? 'js' : 'wasm');
        if (form === 'wasm-pairs') rowsTesting.setFloatPairs(true);
        if (form === 'wasm-copied-in') parallelTesting.freshOutputsCleared(false);
        try {
          const g = form === 'wasm-pairs' ? paired : f;
          const t = performance.now();
          await (c === 'shared in, out' ? g(...args, { out: outArg }) : g(...args));
          const dt = (performance.now() - t) / 1000;
          const key = `${form}|${c}`;
          if (s > 0) best.set(key, Math.min(best.get(key) ?? Infinity, dt)); // the first round: warm-up
        } finally {
          rowsTesting.setFloatPairs(undefined);
          parallelTesting.freshOutputsCleared(true);
          setEngineMode('auto');
        }
      }
    }
    for (const c of CASES) {
      const js = best.get(`js|${c}`)!;
      const cell = (form: Form) => (best.has(`${form}|${c}`) ? formatSeconds(best.get(`${form}|${c}`)!) : '—');
      const wasmBest = Math.min(...forms.filter((e) => e === 'wasm' || e === 'wasm-pairs').map((e) => best.get(`${e}|${c}`)!));
      const copiedIn = best.get(`wasm-copied-in|${c}`)!;
      rows.push([k.name, String(workers), c, cell('js'), cell('wasm'), cell('wasm-pairs'), formatRatio(wasmBest / js), cell('wasm-copied-in'), formatRatio(best.get(`wasm|${c}`)! / copiedIn)]);
      process.stderr.write(`${k.name}, ${workers} workers, ${c}: ${forms.map((form) => `${form} ${formatSeconds(best.get(`${form}|${c}`)!)}`).join(', ')}\n`);
    }
  }
}
const report = [
  '# Parallel target: each engine forced on the workers, by where the operands lie',
  '',
  `\`npx tsx bench/parallel-engines.ts ${argv.join(' ')}\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  '',
  machineMarkdown(describeMachine({ summary: 'not used by this benchmark' })),
  '',
  `Awaited calls, wall time, least of ${SAMPLES} samples, forms and cases in turns (each round starting one later). "ordinary": ordinary inputs, fresh output (as users call); "shared in": \`sharedArray\` inputs, fresh output; "shared in, out": \`sharedArray\` inputs and output. "Wasm, fresh output copied in": the Wasm engine with the output the call allocates copied into the staging arena and back, as before b3f5495 (which clears it instead); "Wasm ÷ copied in": that change's effect (1.00× where nothing is staged).`,
  '',
  markdownTable([{ header: 'kernel' }, { header: 'workers', align: 'right' }, { header: 'operands' }, { header: 'JS', align: 'right' }, { header: 'Wasm', align: 'right' }, { header: 'Wasm pairs', align: 'right' }, { header: 'best Wasm ÷ JS', align: 'right' }, { header: 'Wasm, fresh output copied in', align: 'right' }, { header: 'Wasm ÷ copied in', align: 'right' }], rows),
  '',
].join('\n');
console.log(report);
await shutdown();
