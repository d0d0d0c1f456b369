/**
 * `npm run demo`: every example on every target this machine has, with results and timings.
 */
import { availableTargets } from '../src/index.js';
import { main as hermite } from './hermite.js';
import { main as lorenz96 } from './lorenz96.js';
import { main as saxpy } from './saxpy.js';

const targets = await availableTargets();
console.log(`targets available here: ${targets.join(', ')}${targets.includes('gpu') ? '' : ' (no WebGPU adapter: run scripts/install-lavapipe.sh for a CPU Vulkan driver)'}\n`);
for (const target of targets) {
  await hermite(target);
  await saxpy(target);
  await lorenz96(target);
  console.log();
}
