/**
 * The differential fuzzer at a fixed seed (tests/fuzz/): random kernels over the documented
 * language and random operands, on the cpu target (JS and Wasm engines), the parallel target and
 * the gpu (host and device arrays, lavapipe in CI), each compared bit for bit with the oracle.
 * A fixed number of kernels per run (capped in time on a slow machine); the long run is
 * `npm run fuzz -- --minutes N` (docs/reliability.md gives its tally).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { setParallelOptions, shutdown } from '../../src/index.js';
import { DEFAULT_THRESHOLD } from '../../src/targets/parallel/index.js';
import { describeGpu } from '../gpu-available.js';
import { campaign, emptyTally, report } from './campaign.js';
import { chainReport, emptyChainTally, fuseCampaign } from './fuse-chains.js';

afterAll(async () => {
  setParallelOptions({ threshold: DEFAULT_THRESHOLD });
  await shutdown();
});

describe('the differential fuzzer, seed 26', () => {
  it('cpu (JS and Wasm engines) and parallel agree with the oracle on 1,500 random kernels', { timeout: 120_000 }, async () => {
    const tally = emptyTally();
    await campaign(26, Date.now() + 40_000, ['js', 'wasm', 'parallel'], tally, 5, 1500);
    expect(tally.findings, report(tally)).toEqual([]);
    expect(tally.kernels.get('wasm') ?? 0).toBeGreaterThan(50); // (a loaded machine reaches the time cap first)
  });
});

describe('the differential fuzzer on fused chains, seed 26', () => {
  it('fuse of two random kernels agrees with the oracle run step by step on cpu (both engines) and parallel, 150 chains', { timeout: 120_000 }, async () => {
    setParallelOptions({ threshold: 0 });
    const tally = emptyChainTally();
    await fuseCampaign(26, Date.now() + 30_000, ['fuse-js', 'fuse-wasm', 'fuse-parallel'], tally, 5, 150);
    expect(tally.findings, chainReport(tally)).toEqual([]);
    expect(tally.chains.get('fuse-wasm') ?? 0).toBeGreaterThan(20);
  });
});

describeGpu('the differential fuzzer on the gpu, seed 26', () => {
  it('fuse of two random kernels on the gpu (host arrays) agrees with the oracle, 12 chains', { timeout: 120_000 }, async () => {
    const tally = emptyChainTally();
    await fuseCampaign(26, Date.now() + 30_000, ['fuse-gpu'], tally, 5, 12);
    expect(tally.findings, chainReport(tally)).toEqual([]);
    expect(tally.chains.get('fuse-gpu') ?? 0).toBeGreaterThan(2);
  });

  it('the gpu (host and device arrays) agrees with the oracle on 24 random kernels', { timeout: 120_000 }, async () => {
    const tally = emptyTally();
    await campaign(26, Date.now() + 40_000, ['gpu', 'gpu-device'], tally, 5, 24);
    expect(tally.findings, report(tally)).toEqual([]);
    expect(tally.kernels.get('gpu') ?? 0).toBeGreaterThan(2);
  });
});
