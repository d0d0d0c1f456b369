/**
 * The functions of src/ longer than a limit, read with the TypeScript API: declarations, methods,
 * constructors, accessors, function expressions and arrow functions, each measured from its first
 * line to its last. `npx tsx tests/architecture/function-lengths.ts` lists those over 200 lines.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

export interface LongFunction {
  /** `file:name`, the name as the code gives it (or `<anonymous>`). */
  readonly where: string;
  readonly lines: number;
}

function sourceFiles(root: string, dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? sourceFiles(root, join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : [],
  );
}

function nameOf(node: ts.Node): string {
  const named = node as { name?: ts.Node };
  if (named.name && ts.isIdentifier(named.name)) return named.name.text;
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isPropertyAssignment(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  return '<anonymous>';
}

/** Every function of `dir` (under `root`) longer than `limit` lines. */
export function longFunctions(root: string, limit: number, dir = 'src'): LongFunction[] {
  const found: LongFunction[] = [];
  for (const file of sourceFiles(root, dir)) {
    const source = ts.createSourceFile(file, readFileSync(join(root, file), 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && (node as { body?: ts.Node }).body) {
        const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        if (last - first + 1 > limit) found.push({ where: `${file}:${nameOf(node)}`, lines: last - first + 1 });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

if (process.argv[1]?.endsWith('function-lengths.ts')) {
  const root = join(new URL('.', import.meta.url).pathname, '../..');
  for (const f of longFunctions(root, 200)) console.log(`${f.lines} lines: ${f.where}`);
}
