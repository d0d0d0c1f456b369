/**
 * Dawn's "artificially reduced" lines (printed by native code when it first lists the GPUs on
 * lavapipe and AMD drivers) do not reach the user of `npm run demo`: scripts/filter-dawn-warnings.mjs
 * drops exactly those lines from the command's stderr and passes everything else through.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { describeGpu } from '../gpu-available.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const filter = path.join(repoRoot, 'scripts/filter-dawn-warnings.mjs');
const DAWN_LINE = /artificially reduced/;

interface Outcome { code: number; stdout: string; stderr: string }

/** Runs a command in the repository with node_modules/.bin on PATH, as `npm run` does. */
async function run(command: string, args: readonly string[], timeout = 240_000): Promise<Outcome> {
  const env = { ...process.env, PATH: `${path.join(repoRoot, 'node_modules/.bin')}${path.delimiter}${process.env.PATH}` };
  try {
    const { stdout, stderr } = await promisify(execFile)(command, args, { cwd: repoRoot, env, encoding: 'utf8', timeout, maxBuffer: 64 << 20 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? String(error) };
  }
}

describe('filter-dawn-warnings', () => {
  it("drops exactly Dawn's lines, also when split across writes, and keeps everything else and the exit status", async () => {
    const child = [
      "const w = (s) => process.stderr.write(s);",
      "w('first\\nWarning: maxDynamicUniformBuffersPerPipelineLayout artificially reduced from 1000000 to 16 to fit dynamic offset allocation limit.\\n');",
      "w('Warning: maxDynamicStorageBuffersPerPipelineLayout artificially re');",
      "setTimeout(() => { w('duced from 1000000 to 16 to fit dynamic offset allocation limit.\\nWarning: maxDynamicStorage is mine\\nno newline'); process.exitCode = 3; }, 50);",
    ].join('\n');
    const outcome = await run('node', [filter, 'node', '-e', child]);
    expect(outcome).toEqual({ code: 3, stdout: '', stderr: 'first\nWarning: maxDynamicStorage is mine\nno newline' });
  });

  it('says when the command cannot start', async () => {
    const outcome = await run('node', [filter, './no-such-command']);
    expect(outcome.code).toBe(127);
    expect(outcome.stderr).toContain('could not start `./no-such-command`');
  });
});

describeGpu('npm run demo', () => {
  // `npm run demo -- gpu`: the examples on the gpu target only (the part that starts Dawn), the
  // script taken from package.json and run as npm runs it, without npm's own output.
  it("runs the examples on the gpu and shows none of Dawn's lines", async () => {
    const demo = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.demo!;
    const outcome = await run('sh', ['-c', `${demo} gpu`]);
    expect(outcome.stderr).not.toMatch(DAWN_LINE);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stdout).toContain('targets available here: cpu, parallel, gpu');
    expect(outcome.stdout).toMatch(/saxpy on gpu: .* allclose: true/);
  }, 300_000);

  it('would show them without the filter where Dawn prints them (lavapipe), so the check above is not empty', async () => {
    const probe = "import('webgpu').then(async ({ create }) => { const a = await create([]).requestAdapter(); console.log(a ? a.info.description : 'none'); })";
    const outcome = await run('node', ['-e', probe], 60_000);
    expect(outcome.code, outcome.stderr).toBe(0);
    if (/llvmpipe/.test(outcome.stdout)) expect(outcome.stderr).toMatch(DAWN_LINE);
  }, 60_000);
});
