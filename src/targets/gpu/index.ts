/** Placeholder until the WGSL backend lands. */
import { TargetUnavailableError } from '../../errors.js';
import type { Target } from '../target.js';

export const gpuTarget: Target = {
  name: 'gpu',
  run: async () => {
    throw new TargetUnavailableError('The gpu target is not built yet.');
  },
};
