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

describeGpu('the differential fuzzer on the gpu, seed 26', () => {
  it('the gpu (host and device arrays) agrees with the oracle on 24 random kernels', { timeout: 120_000 }, async () => {
    const tally = emptyTally();
    await campaign(26, Date.now() + 40_000, ['gpu', 'gpu-device'], tally, 5, 24);
    expect(tally.findings, report(tally)).toEqual([]);
    expect(tally.kernels.get('gpu') ?? 0).toBeGreaterThan(2);
  });
});
