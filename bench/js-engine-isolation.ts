/**
 * Does the JS engine slow down in a process where other work ran before it? Per kernel B, fresh
 * processes time B on the JS engine alone, and after a Wasm call (or a parallel call) on ordinary
 * arrays: B-after ÷ B-alone, for this checkout and optionally a base checkout (`--base DIR`, e.g.
 * `git archive main src bench/corpus package.json | tar -x -C DIR`), processes in turns.
 *
 *   npx tsx bench/js-engine-isolation.ts [--quick] [--runs R] [--only relu,user-loop] [--before wasm,parallel] [--base DIR] [--out FILE.md]
 *
 * Each process is bench/lib/js-isolation-child.ts bundled with esbuild and run by plain `node`: a
 * process started through tsx has already detached an ArrayBuffer (its loader does, as it starts),
 * and the first detached ArrayBuffer of a process is what slows typed-array code in V8 for the rest
 * of it (the "ArrayBufferDetaching" protector; block-staging.ts says how the library avoids it).
 * Processes run with `--trace-protector-invalidation`, and the table says whether that happened.
 *
 * `user-loop` is no ufunc: a hand-written loop over typed arrays, the user's own code in the same
 * process. Times: CPU ms of the process per call, the least of 9 after 3 warm-up calls, per
 * process, and of the third call (calibration times a ufunc's first calls); the ratio is of
 * medians over the R processes of each side.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { formatRatio } from './lib/format.js';
import { describeMachine, machineMarkdown, machineSlug } from './lib/machine.js';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';

const argv = process.argv.slice(2);
const flag = (name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const quick = argv.includes('--quick');
const runs = Number(flag('--runs') ?? (quick ? 2 : 5));
const kernels = (flag('--only') ?? 'relu,sigmoid,poly5,softmax,black-scholes,one-long-row-f32,user-loop').split(',');
const befores = (flag('--before') ?? 'wasm,parallel').split(',') as ('wasm' | 'parallel')[];
const divisor = quick ? 16 : 1;
const baseDir = flag('--base');
const here = fileURLToPath(new URL('..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'js-isolation-'));

/** The child bundled against one checkout's library and corpus, with the parallel target's worker beside it. */
async function bundle(dir: string, name: string): Promise<string> {
  const outdir = join(work, name);
  await esbuild.build({
    entryPoints: { child: join(here, 'bench/lib/js-isolation-child.ts'), worker: resolve(dir, 'src/targets/parallel/worker.ts') },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outdir,
    outExtension: { '.js': '.mjs' },
    // The child's imports of the library and the corpus, from the checkout measured.
    plugins: [{
      name: 'checkout',
      setup(build) {
        build.onResolve({ filter: /^\.\.\/(\.\.\/src\/index|corpus\/kernels|corpus\/inputs)\.js$/ }, (a) => (a.importer.endsWith('js-isolation-child.ts') ? { path: resolve(dir, a.path.replace(/^\.\.\/(\.\.\/)?/, (m) => (m === '../../' ? '' : 'bench/')).replace(/\.js$/, '.ts')) } : undefined));
      },
    }],
    external: ['webgpu', 'bullmq', 'ioredis', 'zarrita'],
    logLevel: 'error',
  });
  // The library looks for `worker.js` beside the bundle.
  renameSync(join(outdir, 'worker.mjs'), join(outdir, 'worker.js'));
  return join(outdir, 'child.mjs');
}

const libraries = [{ name: 'this checkout', file: await bundle(here, 'this') }, ...(baseDir ? [{ name: 'base', file: await bundle(baseDir, 'base') }] : [])];

/** One process: the least CPU ms per call of `kernel` after warm-up, the last warm-up call's, and whether an ArrayBuffer was detached in it. */
function runChild(file: string, kernel: string, before: string): { ms: number; third: number; detached: boolean } {
  const out = execFileSync(process.execPath, ['--trace-protector-invalidation', file, kernel, before, String(divisor)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const result = JSON.parse(out.trim().split('\n').at(-1)!) as { first: number[]; ms: number[] };
  return { ms: Math.min(...result.ms), third: result.first.at(-1)!, detached: out.includes('Invalidating protector cell ArrayBufferDetaching') };
}

const started = performance.now();
const rows: string[][] = [];
for (const kernel of kernels) {
  for (const before of befores) {
    const cells: string[] = [];
    for (const lib of libraries) {
      const alone: number[] = [];
      const aloneThird: number[] = [];
      const after: number[] = [];
      let detachedAlone = 0;
      let detachedAfter = 0;
      // Alone and after in turns, so that both see the same load.
      for (let r = 0; r < runs; r++) {
        const a = runChild(lib.file, kernel, 'none');
        const b = runChild(lib.file, kernel, before);
        alone.push(a.ms);
        aloneThird.push(a.third);
        after.push(b.ms);
        detachedAlone += a.detached ? 1 : 0;
        detachedAfter += b.detached ? 1 : 0;
      }
      const ratio = median(after) / median(alone);
      cells.push(median(aloneThird).toFixed(2), median(alone).toFixed(2), median(after).toFixed(2), formatRatio(ratio), `${detachedAlone}/${runs}, ${detachedAfter}/${runs}`);
      process.stderr.write(`${kernel} after ${before} (${lib.name}): alone, third call ${median(aloneThird).toFixed(2)} ms [${aloneThird.map((x) => x.toFixed(2)).join(' ')}], after warm-up ${median(alone).toFixed(2)} ms [${alone.map((x) => x.toFixed(2)).join(' ')}], after ${median(after).toFixed(2)} ms [${after.map((x) => x.toFixed(2)).join(' ')}]: ${formatRatio(ratio)}; detached ${detachedAlone}/${runs}, ${detachedAfter}/${runs}\n`);
    }
    rows.push([kernel, before, ...cells]);
  }
}

const machine = describeMachine({ summary: 'not used by this benchmark' });
const columns = [{ header: 'B (JS engine)' }, { header: 'A: run before' }, ...libraries.flatMap((l) => {
  const p = libraries.length > 1 ? `${l.name}: ` : '';
  return [{ header: `${p}B alone, third call, ms`, align: 'right' as const }, { header: `${p}B alone, ms`, align: 'right' as const }, { header: `${p}B after A, ms`, align: 'right' as const }, { header: `${p}after ÷ alone`, align: 'right' as const }, { header: `${p}ArrayBuffer detached (alone, after)` }];
})];
const report = [
  `# The JS engine in a process where other work ran first${quick ? ' (quick run: sizes ÷ 16)' : ''}`,
  '',
  `\`npx tsx bench/js-engine-isolation.ts ${argv.join(' ')}\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${((performance.now() - started) / 1000).toFixed(0)} s`,
  '',
  machineMarkdown(machine),
  '',
  `Per kernel B and per side, ${runs} pairs of fresh \`node\` processes in turns: B on the JS engine alone, and B after A (wasm: three Wasm calls of saxpy-f64 on 2^20 ordinary float64 elements; parallel: the same on the parallel target). CPU ms per call of B, the least of 9 after 3 warm-up calls, median over the processes; "third call": B's third call in the process (a ufunc's first calls are calibration's trials). "ArrayBuffer detached": in how many processes V8 reported the ArrayBufferDetaching protector invalidated.`,
  '',
  markdownTable(columns, rows),
  '',
].join('\n');
console.log(report);
writeFileSync(flag('--out') ?? fileURLToPath(new URL(`./results/js-engine-isolation-${machineSlug(machine)}${quick ? '-quick' : ''}.md`, import.meta.url)), report);
