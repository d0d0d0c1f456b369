/**
 * Kernel source → ESTree, once per kernel function. The only place that calls acorn.
 */
import { parse as acornParse, type Node } from 'acorn';
import { KernelCompileError, type SourceLocation } from '../errors.js';

/** The ESTree nodes the lowering reads; acorn's own types are too loose to be useful here. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type EsNode = Node & Record<string, any>;

export interface ParsedFunction {
  /** The function's source exactly as `fn.toString()` gave it. */
  readonly source: string;
  readonly name: string;
  /** ArrowFunctionExpression | FunctionExpression | FunctionDeclaration. */
  readonly node: EsNode;
  readonly params: readonly string[];
}

/** Messages point into the kernel's own source: the line, and a caret under the column. */
export function compileError(source: string, loc: SourceLocation, message: string): KernelCompileError {
  const line = source.split('\n')[loc.line - 1] ?? '';
  const caret = ' '.repeat(Math.max(0, loc.column - 1)) + '^';
  const sentence = /^[a-z]/.test(message) ? message[0]!.toUpperCase() + message.slice(1) : message;
  return new KernelCompileError(`${sentence} (kernel line ${loc.line}:${loc.column})\n  ${line}\n  ${caret}`, loc);
}

/** acorn reports 0-based columns, and line 1 of what it parsed starts with the `(` we added. */
export function locationOf(node: EsNode): SourceLocation {
  const start = node.loc!.start;
  return { line: start.line, column: start.line === 1 ? start.column : start.column + 1 };
}

/**
 * Parses a kernel or helper function.
 *
 * @param fn - an arrow function, function expression or declaration (not a method, not native)
 * @returns its ESTree node and parameter names
 * @throws KernelCompileError for syntax the kernel language cannot read
 */
export function parseFunction(fn: unknown, what = 'kernel'): ParsedFunction {
  if (typeof fn !== 'function') {
    throw new KernelCompileError(`The ${what} must be a function, found ${fn === null ? 'null' : typeof fn}.`);
  }
  const source = Function.prototype.toString.call(fn);
  if (/\{\s*\[native code\]\s*\}$/.test(source) || isBuiltin(fn)) {
    throw new KernelCompileError(
      `The ${what}${what === 'kernel' ? '' : ` (the function \`${fn.name || 'anonymous'}\`)`} is a native or bound function, or a built-in (such as \`Math.max\` or \`process.exit\`), which cannot be compiled into a kernel: its code is not kernel-language JavaScript. Pass a plain function written in the kernel language.`,
    );
  }
  refuseInstrumented(source, what);
  let program: EsNode;
  try {
    program = acornParse(`(${source})`, { ecmaVersion: 'latest', locations: true, sourceType: 'script' }) as EsNode;
  } catch (e) {
    // Methods (`{ f(x) {…} }.f`) print as `f(x) {…}`, which is not an expression on its own.
    try {
      program = acornParse(`({${source}})`, { ecmaVersion: 'latest', locations: true }) as EsNode;
      const method = program.body[0].expression.properties[0].value as EsNode;
      return finish(source, fn.name, method);
    } catch {
      const err = e as { message: string; loc?: { line: number; column: number } };
      const loc = err.loc ? { line: err.loc.line, column: err.loc.line === 1 ? err.loc.column : err.loc.column + 1 } : { line: 1, column: 1 };
      throw compileError(source, loc, `The ${what} could not be parsed: ${err.message.replace(/ \(\d+:\d+\)$/, '')}`);
    }
  }
  const expr = program.body[0]?.expression as EsNode | undefined;
  if (!expr || (expr.type !== 'ArrowFunctionExpression' && expr.type !== 'FunctionExpression')) {
    throw new KernelCompileError(`The ${what} must be a function, found source that is not one: ${source.slice(0, 60)}`);
  }
  return finish(source, fn.name, expr);
}

/**
 * Istanbul (Jest's default coverage, `--coverage.provider=istanbul`) rewrites functions with
 * counters such as `cov_1xv7984owx().s[0]++`, which are not kernel language: say so, and what to do,
 * instead of failing on the first counter as if the user had written it.
 */
function refuseInstrumented(source: string, what: string): void {
  const counter = /\bcov_[0-9a-z]+\(\)\.[sfb]\[/i.exec(source);
  if (!counter) return;
  throw new KernelCompileError(
    `The ${what} was instrumented for code coverage: its source holds Istanbul's counters (\`${counter[0]}…\`), which a kernel cannot run. ` +
      'Exclude the file that defines it from instrumentation (`/* istanbul ignore file */` at its top, or your test runner\'s `coverage.exclude`), ' +
      'or use V8 coverage (`vitest --coverage.provider=v8`, `c8`, Jest\'s `coverageProvider: "v8"`), which leaves the source alone.',
  );
}

function finish(source: string, name: string, node: EsNode): ParsedFunction {
  if (node.async) throw compileError(source, locationOf(node), '`async` functions are not supported in kernels: a kernel computes synchronously');
  if (node.generator) throw compileError(source, locationOf(node), 'generator functions are not supported in kernels');
  const params = (node.params as EsNode[]).map((p) => {
    if (p.type !== 'Identifier') {
      throw compileError(source, locationOf(p), `parameter \`${source.slice(p.start - 1, p.end - 1)}\` must be a plain name (no defaults, destructuring or rest)`);
    }
    return p.name as string;
  });
  return { source, name: name || 'kernel', node, params };
}

/** Functions of the runtime itself (`process.exit`, `console.log`, …), found once on first use. */
let builtins: WeakSet<Function> | undefined;

/**
 * Whether `fn` belongs to the JavaScript runtime rather than to the user. Some of Node's built-ins
 * are written in JavaScript (`process.exit` prints its source, which starts with a destructuring
 * `require`), so `[native code]` alone does not find them: the function-valued properties of the
 * global object and of the objects hanging off it (and of `process`) are collected instead.
 *
 * Only data properties are read, never getters: Node's globals have accessors with side effects
 * (`process.stdin` opens a stream on fd 0, `process._channel` warns, `crypto` loads a module), and
 * touching them from a kernel compile once made test processes misbehave.
 */
function isBuiltin(fn: Function): boolean {
  if (!builtins) {
    builtins = new WeakSet();
    const roots: unknown[] = [globalThis, ...ownDataValues(globalThis)];
    if (typeof process === 'object') roots.push(process);
    for (const root of roots) {
      if ((typeof root !== 'object' && typeof root !== 'function') || root === null) continue;
      for (const value of ownDataValues(root)) if (typeof value === 'function') builtins.add(value);
    }
  }
  return builtins.has(fn);
}

/** The values of `object`'s own data properties; accessors are skipped, so no getter runs. */
function ownDataValues(object: object): unknown[] {
  const values: unknown[] = [];
  for (const key of Object.getOwnPropertyNames(object)) {
    const descriptor = Object.getOwnPropertyDescriptor(object, key);
    if (descriptor && 'value' in descriptor) values.push(descriptor.value);
  }
  return values;
}
