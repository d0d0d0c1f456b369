/**
 * `npm run demo`: every example on every target this machine has, with results and timings.
 * `npm run demo -- gpu` (or `cpu`, `parallel`, several): only those targets.
 */
import { availableTargets, type TargetName } from '../src/index.js';
import { main as hermite } from './hermite.js';
import { main as lorenz96 } from './lorenz96.js';
import { main as saxpy } from './saxpy.js';

const targets = await availableTargets();
console.log(`targets available here: ${targets.join(', ')}${targets.includes('gpu') ? '' : ' (no WebGPU adapter: run scripts/install-lavapipe.sh for a CPU Vulkan driver)'}\n`);
const asked = process.argv.slice(2);
for (const name of asked) {
  if (!targets.includes(name as TargetName)) throw new Error(`\`${name}\` is not a target available here; expected one of ${targets.join(', ')}.`);
}
for (const target of asked.length > 0 ? (asked as TargetName[]) : targets) {
  await hermite(target);
  await saxpy(target);
  await lorenz96(target);
  console.log();
}
