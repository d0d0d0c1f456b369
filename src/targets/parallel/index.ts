/** Placeholder until the worker pool lands: runs on the calling thread. */
import { cpuTarget } from '../cpu/index.js';
import type { Target } from '../target.js';

export const parallelTarget: Target = { ...cpuTarget, name: 'parallel' };
