/**
 * The long fuzzing run: `npm run fuzz -- --minutes 60 [--seed 1] [--where js,wasm,parallel,gpu,gpu-device] [--rows 300]`
 * (or `--hours N`). Prints the tally (kernels and kernel × input pairs per target, findings with
 * their repros, the constructs generated) at the end and every `--every` minutes.
 */
import { shutdown } from '../../src/index.js';
import { campaign, emptyTally, report } from './campaign.js';
import type { Where } from './differential.js';

const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const minutes = Number(arg('minutes') ?? 0) + 60 * Number(arg('hours') ?? 0) || 1;
const seed = Number(arg('seed') ?? 1);
const wheres = (arg('where') ?? 'js,wasm,parallel,gpu,gpu-device').split(',') as Where[];
const every = Number(arg('every') ?? 10);
/** The most rows (elements) a cpu case may have (a fifth of the cases; the rest up to 24). */
const maxRows = Number(arg('rows') ?? 300);
const tally = emptyTally();
const end = Date.now() + minutes * 60_000;
const started = Date.now();
for (let round = 0; Date.now() < end; round++) {
  await campaign(seed + round * 7919, Math.min(end, Date.now() + every * 60_000), wheres, tally, 200, Infinity, maxRows);
  console.log(`--- after ${((Date.now() - started) / 60_000).toFixed(1)} min (seed ${seed}, rounds ${round + 1})\n${report(tally)}`);
  if (tally.findings.length >= 200) break;
}
await shutdown();
process.exit(tally.findings.length ? 1 : 0);
