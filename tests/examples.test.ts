/**
 * End-to-end: the examples, through the public API, on every target, against the seeds' own
 * printed results and plain JS references.
 */
import { describe, expect, it } from 'vitest';
import { seedTable } from '../examples/hermite.js';
import { runLorenz } from '../examples/lorenz96.js';
import { runSaxpy } from '../examples/saxpy.js';
import { estimatePi } from '../examples/monte-carlo-pi.js';
import { formatTable } from '../examples/util.js';
import { TARGETS } from './targets.js';

/** SEEDS.md: the Hermite recurrence for rows [1, i, 1, 1], i = 0..4, N = 4, as NumPy printed it. */
const SEED_TABLE = `[[ 1.          0.         -0.70710677 -0.        ]
 [ 1.          1.          0.         -0.8164966 ]
 [ 1.          2.          2.1213202   0.8164966 ]
 [ 1.          3.          5.656854    7.3484693 ]
 [ 1.          4.         10.606602   21.22891   ]]`;

const seedValues = SEED_TABLE.replace(/[[\]]/g, ' ').trim().split(/\s+/).map(Number);

describe.each(TARGETS)('examples on %s', (target) => {
  it('hermite reproduces the seed table both ways', async () => {
    const { fromScalar, inPlace } = await seedTable(target);
    for (const table of [fromScalar, inPlace]) {
      const values = [...table.data].map(Number);
      // float32 results printed with float32's shortest digits: equal as float32.
      values.forEach((v, i) => expect(v).toBeCloseTo(Math.fround(seedValues[i]!), target === 'gpu' ? 5 : 7));
      if (target !== 'gpu') expect(values).toEqual(seedValues.map(Math.fround));
    }
    if (target !== 'gpu') expect(formatTable(fromScalar)).toBe(formatTable({ data: Float32Array.from(seedValues), shape: [5, 4], strides: [4, 1], offset: 0, dtype: 'float32', order: 'row-major' }));
  });

  it('saxpy agrees with a*x + y (allclose, as the seed checks)', async () => {
    const { maxError } = await runSaxpy(target, 100_003);
    expect(maxError).toBeLessThanOrEqual(target === 'gpu' ? 0 : 0); // + and * are exact on every target
  });

  it('lorenz96 steps an ensemble like the plain JS reference', async () => {
    const { maxError, result } = await runLorenz(target, 2_000);
    expect(result.shape).toEqual([2_000, 40]);
    expect(maxError).toBeLessThan(target === 'gpu' ? 1e-4 : 2e-6);
  });

  it('monte-carlo-pi counts the same points inside on every target for a seed', async () => {
    const { pi, inside, thrown } = await estimatePi(target, 1024, 1024, 2026);
    expect(thrown).toBe(1_048_576);
    expect(Math.abs(pi - Math.PI)).toBeLessThan(0.01); // σ ≈ 0.0016
    expect(inside).toBe(EXPECTED_PI_HITS);
  }, 60_000);
});

/** `estimatePi('cpu', 1024, 1024, 2026)`: the points inside, which every target must count. */
const EXPECTED_PI_HITS = 823_969;
