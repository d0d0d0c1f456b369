/**
 * The long fuzzing run: `npm run fuzz -- --minutes 60 [--seed 1] [--where js,wasm,parallel,gpu,gpu-device,fuse-js,fuse-wasm,fuse-parallel,fuse-gpu] [--rows 300]`
 * (or `--hours N`). Prints the tally (kernels and kernel × input pairs per target, findings with
 * their repros, the constructs generated) at the end and every `--every` minutes.
 */
import { shutdown } from '../../src/index.js';
import { campaign, emptyTally, report } from './campaign.js';
import type { Where } from './differential.js';
import { chainReport, emptyChainTally, FUSE_WHERE, fuseCampaign, type FuseWhere } from './fuse-chains.js';

const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const minutes = Number(arg('minutes') ?? 0) + 60 * Number(arg('hours') ?? 0) || 1;
const seed = Number(arg('seed') ?? 1);
const all = (arg('where') ?? 'js,wasm,parallel,gpu,gpu-device,fuse-js,fuse-wasm,fuse-parallel,fuse-gpu').split(',');
const fuseWheres = all.filter((w) => [...FUSE_WHERE.cpu, ...FUSE_WHERE.gpu].includes(w as FuseWhere)) as FuseWhere[];
const wheres = all.filter((w) => !fuseWheres.includes(w as FuseWhere)) as Where[];
const every = Number(arg('every') ?? 10);
/** The most rows (elements) a cpu case may have (a fifth of the cases; the rest up to 24). */
const maxRows = Number(arg('rows') ?? 300);
const tally = emptyTally();
const chains = emptyChainTally();
const end = Date.now() + minutes * 60_000;
const started = Date.now();
for (let round = 0; Date.now() < end; round++) {
  // Four fifths of each round for single kernels, a fifth for fused chains of two.
  const roundEnd = Math.min(end, Date.now() + every * 60_000);
  const kernelsEnd = fuseWheres.length ? Date.now() + 0.8 * (roundEnd - Date.now()) : roundEnd;
  if (wheres.length) await campaign(seed + round * 7919, kernelsEnd, wheres, tally, 200, Infinity, maxRows);
  if (fuseWheres.length) await fuseCampaign(seed + round * 7919, roundEnd, fuseWheres, chains, 200);
  console.log(`--- after ${((Date.now() - started) / 60_000).toFixed(1)} min (seed ${seed}, rounds ${round + 1})\n${report(tally)}\n${chainReport(chains)}`);
  if (tally.findings.length + chains.findings.length >= 200) break;
}
await shutdown();
process.exit(tally.findings.length || chains.findings.length ? 1 : 0);
