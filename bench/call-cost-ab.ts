/**
 * A/B of gpu per-call cost (bench/call-cost.ts) between this checkout and a base: N processes per
 * side, alternating sides (base, new, base, new, …), each running bench/call-cost.ts of this
 * checkout over one library (`--lib`). Prints per case the medians over processes of the steady
 * wall time and of the least main-thread CPU time per call of a chain (JS and Dawn's encoding: what
 * the library's per-call work moves; other load on the machine only adds to it, so the least of
 * several chains is the steadiest figure on a loaded machine), and new ÷ base.
 *
 *   npx tsx bench/call-cost-ab.ts --base DIR [--processes 4] [--quick] [--only a,b] [--reps N] [--sample-ms 300] [--gpu-warm-ms 1000]
 *   npx tsx bench/call-cost-ab.ts --base-ref COMMIT …   # the base extracted with `git archive`
 *   npx tsx bench/call-cost-ab.ts --base DIR --new DIR2 … # another checkout as the new side
 *   npx tsx bench/call-cost-ab.ts --base DIR --side a=DIR2 --side b=DIR3 …  # several, each against the base
 *
 * `--peers`: CuPy's side of the SAXPY rows too (bench/peers/cupy_call_cost.py), where CuPy is installed.
 *
 * The base is another checkout's root (its src/ is loaded; node_modules is linked in from here
 * when it has none). One process per side at a time, so that neither disturbs the other; the
 * machine's noise falls on both sides alike.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';

const argv = process.argv.slice(2);
const flag = (name: string): string | undefined => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const root = fileURLToPath(new URL('..', import.meta.url));
const processes = Number(flag('--processes') ?? 4);
const passOn = [...(argv.includes('--quick') ? ['--quick'] : []), ...(flag('--reps') ? ['--reps', flag('--reps')!] : []), ...(flag('--gpu-warm-ms') ? ['--gpu-warm-ms', flag('--gpu-warm-ms')!] : []), '--sample-ms', flag('--sample-ms') ?? '300', ...(flag('--only') ? ['--only', flag('--only')!] : []), '--skip-peers', '--json'];

function baseDir(): string {
  const dir = flag('--base');
  if (dir) return resolve(dir);
  const ref = flag('--base-ref');
  if (!ref) throw new Error('usage: npx tsx bench/call-cost-ab.ts --base DIR | --base-ref COMMIT [--processes N] [--quick] [--only a,b]');
  const into = mkdtempSync(join(tmpdir(), 'ufunc-ab-base-'));
  const archive = execFileSync('git', ['-C', root, 'archive', ref, 'src', 'package.json', 'tsconfig.json'], { maxBuffer: 1 << 30 });
  execFileSync('tar', ['-x', '-C', into], { input: archive });
  return into;
}
const base = baseDir();
/** The sides after the base: `--side name=DIR` (repeatable), else this checkout (or `--new DIR`) as "new". */
const sides: { name: string; dir: string }[] = argv.flatMap((a, i) => (a === '--side' ? [argv[i + 1]!] : [])).map((spec) => {
  const at = spec.indexOf('=');
  return { name: spec.slice(0, at), dir: resolve(spec.slice(at + 1)) };
});
if (sides.length === 0) sides.push({ name: 'new', dir: resolve(flag('--new') ?? root) });
const all = [{ name: 'base', dir: base }, ...sides];
for (const { dir } of all) if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));

interface Row {
  readonly name: string;
  readonly steadyUs: number;
  readonly mainMinUs: number;
}
const runs = new Map<string, Row[][]>(all.map((side) => [side.name, []]));
let adapter = '';
for (let p = 0; p < processes; p++) {
  for (const side of all) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'bench/call-cost.ts'), '--lib', side.dir, ...passOn], { cwd: root, encoding: 'utf8', timeout: 600_000 });
    const line = r.stdout.split('\n').find((l) => l.startsWith('JSON '));
    if (!line) throw new Error(`${side.name} process ${p + 1} printed no result (status ${r.status}):\n${r.stdout}\n${r.stderr}`);
    const parsed = JSON.parse(line.slice(5)) as { adapter: string; rows: Row[] };
    adapter = parsed.adapter;
    runs.get(side.name)!.push(parsed.rows);
    console.log(`${side.name} process ${p + 1}: ${parsed.rows.map((row) => `${row.name} ${row.steadyUs.toFixed(1)} µs (main thread ${row.mainMinUs.toFixed(1)})`).join('; ')}`);
  }
}

const names = runs.get('base')![0]!.map((row) => row.name);
const of = (side: string, name: string, key: 'steadyUs' | 'mainMinUs') => median(runs.get(side)!.map((rows) => rows.find((row) => row.name === name)![key]));
const table = markdownTable(
  [{ header: 'case' }, { header: 'side' }, ...['µs/call', '÷ base', 'main-thread CPU µs/call (least of a chain)', '÷ base'].map((header) => ({ header, align: 'right' as const }))],
  names.flatMap((name) =>
    all.map(({ name: side }) => {
      const [wall, main] = [of(side, name, 'steadyUs'), of(side, name, 'mainMinUs')];
      const ratio = (x: number, b: number) => (side === 'base' ? '' : `${(x / b).toFixed(2)}×`);
      return [name, side, wall.toFixed(1), ratio(wall, of('base', name, 'steadyUs')), main.toFixed(1), ratio(main, of('base', name, 'mainMinUs'))];
    }),
  ),
);
const doc = `# gpu per-call cost, A/B (bench/call-cost-ab.ts)\n\n- gpu: ${adapter}\n- ${new Date().toISOString()}, node ${process.version}; base ${flag('--base-ref') ?? base}; ${sides.map((x) => `${x.name} ${x.dir}`).join(', ')}; ${processes} processes per side, alternating; medians over processes of each process's steady median\n\n${table}\n`;
let peer = '';
if (argv.includes('--peers')) {
  const calls = argv.includes('--quick') ? 200 : 1000;
  const r = spawnSync('python3', [join(root, 'bench/peers/cupy_call_cost.py'), String(calls), '9'], { cwd: join(root, 'bench/peers'), encoding: 'utf8', timeout: 300_000 });
  peer = r.status === 0 ? `\nCuPy (${calls} calls a chain, 9 chains): ${r.stdout.trim()}\n` : `\nCuPy: not run (${(r.error?.message ?? r.stderr ?? '').trim().split('\n').slice(-1)[0]})\n`;
}
console.log(`\n${doc}${peer}`);
if (process.env.OUT) writeFileSync(join(process.env.OUT, 'call-cost-ab.md'), doc + peer);
process.exit(0);
