/**
 * Dawn's "artificially reduced" lines (printed by native code when it first lists the GPUs on
 * lavapipe and AMD drivers) never reach a program's stderr: src/platform/native-stderr.ts points
 * fd 2 elsewhere around the call that prints them and writes back everything else. Checked in child
 * processes, as a user's program meets it: the switch itself with lines written to fd 2 directly
 * (no GPU needed), for each kind of stderr; and a program on the gpu target (lavapipe here and in CI).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { describeGpu } from '../gpu-available.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const tsx = path.join(repoRoot, 'node_modules/.bin/tsx');
const DAWN_LINE = /artificially reduced/;
const dir = mkdtempSync(path.join(tmpdir(), 'ufunc-native-stderr-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const WARNINGS = ['Uniform', 'Storage'].map((kind) => `Warning: maxDynamic${kind}BuffersPerPipelineLayout artificially reduced from 1000000 to 16 to fit dynamic offset allocation limit.`);

/** A program that writes Dawn's lines and others straight to fd 2 inside the switch, as native code does. */
const SWITCH_PROGRAM = `
import { writeSync } from 'node:fs';
import { DAWN_LIMIT_WARNING, withStderrLinesDropped } from ${JSON.stringify(path.join(repoRoot, 'src/platform/native-stderr.ts'))};
process.stderr.write('before\\n');
const value = withStderrLinesDropped(DAWN_LIMIT_WARNING, () => {
  writeSync(2, 'driver says hello\\n${WARNINGS[0]}\\n');
  writeSync(2, '${WARNINGS[1]}\\nWarning: maxDynamicStorage is mine\\nno newline');
  return 42;
});
try {
  withStderrLinesDropped(DAWN_LIMIT_WARNING, () => { writeSync(2, '\\n${WARNINGS[0]}\\n'); throw new Error('thrown'); });
} catch (e) { process.stderr.write('caught ' + e.message + '\\n'); }
process.stderr.write('after ' + value + '\\n');
console.log('stdout line');
`;
const program = path.join(dir, 'switch.mts');
writeFileSync(program, SWITCH_PROGRAM);
const KEPT = 'before\ndriver says hello\nWarning: maxDynamicStorage is mine\nno newline\ncaught thrown\nafter 42\n';

interface Outcome { code: number; stdout: string; stderr: string }

/**
 * Runs tsx with these arguments, its stderr through a pipe (`| cat`), as a shell pipeline or a
 * terminal gives it; a Node parent's default (execFile's) is a socket, which cannot be switched.
 */
async function run(args: readonly string[], timeout = 120_000): Promise<Outcome> {
  return shell(`{ ${[tsx, ...args].map(quote).join(' ')} 2>&1 1>&3 | cat >&2; } 3>&1`, timeout);
}

describe.runIf(process.platform === 'linux')('withStderrLinesDropped', () => {
  it('drops exactly those lines written to fd 2 during the call, keeps the rest in order (stderr a pipe)', async () => {
    const outcome = await run([program]);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stderr).toBe(KEPT);
    expect(outcome.stdout).toBe('stdout line\n');
  });

  it('drops them where stderr is a file, appended to or written from its end, and stdout elsewhere', async () => {
    for (const [redirect, before] of [['2>>', 'earlier\n'], ['2>', '']] as const) {
      const file = path.join(dir, `stderr${redirect === '2>>' ? '-append' : ''}.txt`);
      writeFileSync(file, before);
      const outcome = await shell(`${quote(tsx)} ${quote(program)} ${redirect} ${quote(file)}`);
      expect(outcome.code, outcome.stderr).toBe(0);
      expect(readFileSync(file, 'utf8')).toBe(before + KEPT);
      expect(outcome.stdout).toBe('stdout line\n');
    }
  });

  it('leaves them (and everything else) as written where stderr is a socket (a Node parent\'s default pipe): it cannot be reopened', async () => {
    const outcome = await new Promise<Outcome>((resolve) => {
      execFile(tsx, [program], { cwd: repoRoot, encoding: 'utf8', timeout: 120_000 }, (error, stdout, stderr) => resolve({ code: error ? -1 : 0, stdout, stderr }));
    });
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stderr).toBe(`before\ndriver says hello\n${WARNINGS[0]}\n${WARNINGS[1]}\nWarning: maxDynamicStorage is mine\nno newline\n${WARNINGS[0]}\ncaught thrown\nafter 42\n`);
  });

  it('leaves them (and everything else) as written where stdout shares the file (`> log 2>&1`): a reopened stderr would overwrite stdout', async () => {
    const file = path.join(dir, 'both.txt');
    const outcome = await shell(`${quote(tsx)} ${quote(program)} > ${quote(file)} 2>&1`);
    expect(outcome.code, outcome.stderr).toBe(0);
    const written = readFileSync(file, 'utf8');
    expect(written).toContain(WARNINGS[0]);
    expect(written).toContain('after 42\nstdout line\n');
  });
});

function quote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

async function shell(command: string, timeout = 120_000): Promise<Outcome> {
  try {
    const { stdout, stderr } = await promisify(execFile)('bash', ['-o', 'pipefail', '-c', command], { cwd: repoRoot, encoding: 'utf8', timeout, maxBuffer: 64 << 20 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? String(error) };
  }
}

/** A user's program on the gpu target, from the package's Node entry. */
const GPU_PROGRAM = `
import { vectorize, shutdown } from ${JSON.stringify(path.join(repoRoot, 'src/index.ts'))};
const twice = vectorize(['float32(float32)'], { target: 'gpu' })((x) => 2 * x);
console.log(Array.from(await twice(new Float32Array([1, 2, 3]))).join(','));
process.stderr.write('program done\\n');
await shutdown();
`;

describeGpu("a program on the gpu target prints none of Dawn's lines", () => {
  const gpuProgram = path.join(dir, 'gpu.mts');
  writeFileSync(gpuProgram, GPU_PROGRAM);

  it('with stderr a pipe, and a file', async () => {
    const piped = await run([gpuProgram], 180_000);
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).toBe('2,4,6\n');
    expect(piped.stderr).not.toMatch(DAWN_LINE);
    expect(piped.stderr).toContain('program done\n');
    const file = path.join(dir, 'gpu-stderr.txt');
    const toFile = await shell(`${quote(tsx)} ${quote(gpuProgram)} 2> ${quote(file)}`);
    expect(toFile.code, readFileSync(file, 'utf8')).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('program done\n');
  }, 360_000);

  it('`npm run demo -- gpu` (the examples on the gpu, the script as package.json has it) shows none of them', async () => {
    const demo = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.demo!;
    const bin = path.join(repoRoot, 'node_modules/.bin');
    const outcome = await shell(`{ PATH=${quote(bin)}:"$PATH" ${demo} gpu 2>&1 1>&3 | cat >&2; } 3>&1`, 300_000);
    expect(outcome.stderr).not.toMatch(DAWN_LINE);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stdout).toContain('targets available here: cpu, parallel, gpu');
    expect(outcome.stdout).toMatch(/saxpy on gpu: .* allclose: true/);
  }, 300_000);

  it('while the same request without the switch prints them here (lavapipe), so the check above is not empty', async () => {
    const probe = path.join(dir, 'probe.mts');
    writeFileSync(probe, `import { create } from ${JSON.stringify(path.join(repoRoot, 'node_modules/webgpu/index.js'))}; const a = await create([]).requestAdapter(); console.log(a ? a.info.description : 'none');`);
    const outcome = await run([probe], 120_000);
    expect(outcome.code, outcome.stderr).toBe(0);
    if (/llvmpipe/.test(outcome.stdout)) expect(outcome.stderr).toMatch(DAWN_LINE);
  }, 120_000);
});
