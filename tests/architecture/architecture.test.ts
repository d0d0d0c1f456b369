/**
 * The shape of src/ that docs/architecture.md describes, checked on the code: no import cycle of
 * more than two files, targets below the front, the contract floor at the bottom, the front naming
 * no target, and no function over 200 lines.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { longFunctions } from './function-lengths.js';
import { importCycles, importGraph } from './import-graph.js';

const ROOT = join(new URL('.', import.meta.url).pathname, '../..');
const graph = importGraph(ROOT);

/** What targets may import outside src/targets and src/compiler: the floor and shared services, not the front. */
const BELOW_THE_FRONT = new Set([
  'src/plan.ts', 'src/dtypes.ts', 'src/layout.ts', 'src/errors.ts', 'src/cancellation.ts', 'src/options.ts', 'src/shared-memory.ts',
  'src/platform/platform.ts', 'src/platform/source-worker.ts', 'src/probes.ts',
]);

/** The contract floor: what it may import (the compiler's IR, dtypes, layout, and itself). */
const FLOOR = ['src/plan.ts', 'src/targets/target.ts', 'src/targets/executables.ts'];
const FLOOR_IMPORTS = new Set([...FLOOR, 'src/compiler/ir.ts', 'src/compiler/math-functions.ts', 'src/dtypes.ts', 'src/layout.ts']);

/** Applications over the public API (the cluster worker, its CLI, zarr arrays): they may pick a target as users do. */
const APPLICATIONS = ['src/cli.ts', 'src/cluster/', 'src/zarr/'];

/** The front: the pipeline a call goes through, above the registry. */
const isFront = (file: string) =>
  !['src/targets/', 'src/compiler/', 'src/platform/', 'src/signature-parser/', ...APPLICATIONS].some((dir) => file.startsWith(dir));

describe('the architecture of src/', () => {
  it('has no import cycle of more than two files', () => {
    expect(importCycles(graph).filter((c) => c.length > 2)).toEqual([]);
  });

  it('keeps targets below the front: they import the floor and shared services only', () => {
    const upward = [...graph].flatMap(([file, targets]) =>
      file.startsWith('src/targets/') && file !== 'src/targets/registry.ts'
        ? targets.filter((t) => !t.startsWith('src/targets/') && !t.startsWith('src/compiler/') && !BELOW_THE_FRONT.has(t)).map((t) => `${file} -> ${t}`)
        : [],
    );
    expect(upward).toEqual([]);
  });

  it('has the contract floor import only the IR, dtypes and layout', () => {
    const imports = FLOOR.flatMap((file) => graph.get(file)!.filter((t) => !FLOOR_IMPORTS.has(t)).map((t) => `${file} -> ${t}`));
    expect(imports).toEqual([]);
  });

  it('has the front name no built-in target but the default (the registry knows them)', () => {
    const named: string[] = [];
    for (const file of [...graph.keys()].filter(isFront)) {
      const source = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node): void => {
        if (ts.isStringLiteralLike(node) && (node.text === 'gpu' || node.text === 'parallel')) named.push(`${file}: '${node.text}'`);
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect(named).toEqual([]);
  });

  // Parses every file of src/: about a second on a quiet machine, longer under load.
  it('has no function over 200 lines', () => {
    expect(longFunctions(ROOT, 200).map((f) => f.where)).toEqual([]);
  }, 30_000);
});
