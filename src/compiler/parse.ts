/**
 * Kernel source → ESTree, once per kernel function. The only place that calls acorn.
 */
import { parse as acornParse, type Node } from 'acorn';
import { KernelCompileError, type SourceLocation } from '../errors.js';
import type { FunctionOrigin } from '../platform/platform.js';
import { describePosition, originOf, setLazyMessage } from './source-excerpt.js';

/** The ESTree nodes the lowering reads; acorn's own types are too loose to be useful here. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type EsNode = Node & Record<string, any>;

export interface ParsedFunction {
  /** The function's source exactly as `fn.toString()` gave it, or as passed as text. */
  readonly source: string;
  readonly name: string;
  /** ArrowFunctionExpression | FunctionExpression | FunctionDeclaration. */
  readonly node: EsNode;
  readonly params: readonly string[];
  /** The function it was read from; absent for source text. */
  readonly fn?: Function;
}

/** A kernel's or helper's text, and the function it is the text of (absent for source text). */
export interface KernelText {
  readonly source: string;
  readonly fn?: Function;
}

/**
 * A compile error at `loc` of a kernel's text, ending with the line and a caret under the column.
 * For a function, the position and the line are the user's file's (`tests/k.ts:12:16`), found when
 * the message is first read (platform `functionOrigin`: the inspector and source maps, which only
 * messages pay for: some compile errors are caught and never shown); where a tool transformed the
 * file and left no source map, the message says the position is in the code it made. Source text,
 * and functions on a host that cannot tell where they were written, get `(kernel line 2:14)` and
 * the line of the text.
 *
 * @param text - the kernel's text (or an object with it and its function)
 * @param loc - the position in the text, from 1
 * @param message - what is wrong, a sentence
 * @returns the error, to throw
 * @example
 * throw compileError(parsed, locationOf(node), `\`${name}\` is not defined in the kernel`);
 */
export function compileError(text: KernelText | string, loc: SourceLocation, message: string): KernelCompileError {
  const { source, fn } = typeof text === 'string' ? { source: text, fn: undefined } : text;
  const sentence = /^[a-z]/.test(message) ? message[0]!.toUpperCase() + message.slice(1) : message;
  const line = source.split('\n')[loc.line - 1] ?? '';
  const placed = (origin: FunctionOrigin | undefined) => {
    const { where, quoted } = describePosition(loc, line, origin);
    return `${sentence} (${where})\n  ${quoted}`;
  };
  const error = new KernelCompileError(placed(undefined), { line: loc.line, column: loc.column });
  if (fn) setLazyMessage(error, () => placed(originOf(fn)));
  return error;
}

/**
 * acorn reports 0-based columns, and line 1 of what it parsed starts with the `(` we added; the
 * parse asked acorn to put the function's text in every location (`sourceFile`).
 */
export function locationOf(node: EsNode): SourceLocation {
  const start = node.loc!.start;
  const source = node.loc!.source as string | undefined | null;
  return { line: start.line, column: start.line === 1 ? start.column : start.column + 1, ...(typeof source === 'string' ? { source } : {}) };
}

/**
 * Parses a kernel or helper function, given as a function or as its source text. Source text is
 * what survives any minifier (a string is never renamed or rewritten) and coverage instrumenter.
 *
 * @param fn - an arrow function, function expression or declaration (not a method, not native),
 *   or the source text of one, e.g. `'(x, y) => x * y'`
 * @returns its ESTree node and parameter names; Istanbul's coverage counters are left out
 * @throws KernelCompileError for syntax the kernel language cannot read
 */
export function parseFunction(fn: unknown, what = 'kernel'): ParsedFunction {
  if (typeof fn === 'string') return parseSource(fn.trim(), '', what);
  if (typeof fn !== 'function') {
    throw new KernelCompileError(`The ${what} must be a function or its source text, found ${fn === null ? 'null' : typeof fn}.`);
  }
  const source = Function.prototype.toString.call(fn);
  if (/\{\s*\[native code\]\s*\}$/.test(source) || isBuiltin(fn)) {
    throw new KernelCompileError(
      `The ${what}${what === 'kernel' ? '' : ` (the function \`${fn.name || 'anonymous'}\`)`} is a native or bound function, or a built-in (such as \`Math.max\` or \`process.exit\`), which cannot be compiled into a kernel: its code is not kernel-language JavaScript. Pass a plain function written in the kernel language.`,
    );
  }
  return parseSource(source, fn.name, what, fn);
}

function parseSource(source: string, name: string, what: string, fn?: Function): ParsedFunction {
  const text: KernelText = { source, fn };
  let program: EsNode;
  try {
    program = acornParse(`(${source}\n)`, { ecmaVersion: 'latest', locations: true, sourceType: 'script', sourceFile: source }) as EsNode;
  } catch (e) {
    // Methods (`{ f(x) {…} }.f`) print as `f(x) {…}`, which is not an expression on its own.
    try {
      program = acornParse(`({${source}\n})`, { ecmaVersion: 'latest', locations: true, sourceFile: source }) as EsNode;
      const object = program.body[0].expression as EsNode;
      if (program.body.length !== 1 || object.properties.length !== 1 || object.properties[0].type !== 'Property' || !object.properties[0].method) throw e;
      const method = object.properties[0].value as EsNode;
      return finish(text, name, method, what);
    } catch {
      const err = e as { message: string; loc?: { line: number; column: number } };
      const lines = source.split('\n');
      // Past the end of the source (the `\n)` we added): just after its last character.
      const loc = !err.loc ? { line: 1, column: 1 }
        : err.loc.line > lines.length ? { line: lines.length, column: lines[lines.length - 1]!.length + 1 }
        : { line: err.loc.line, column: err.loc.line === 1 ? err.loc.column : err.loc.column + 1 };
      // acorn ends its messages with the position and, given `sourceFile`, ` in ` and the text.
      const said = err.message.endsWith(` in ${source}`) ? err.message.slice(0, -` in ${source}`.length) : err.message;
      throw compileError(text, loc, `The ${what} could not be parsed: ${said.replace(/ \(\d+:\d+\)$/, '')}`);
    }
  }
  const expr = program.body[0]?.expression as EsNode | undefined;
  if (!expr || (expr.type !== 'ArrowFunctionExpression' && expr.type !== 'FunctionExpression')) {
    throw new KernelCompileError(`The ${what} must be a function, found source that is not one: ${source.slice(0, 60)}`);
  }
  // `(x) => x ) ; other ; ((y) => y` parses as three statements once wrapped in parentheses: the
  // source must be exactly one function (kernels travel as text), not a function and more.
  if (program.body.length !== 1 || expr.start < 1 || expr.end > source.length + 1) {
    const rest = program.body.length > 1 ? (program.body[1] as EsNode) : expr;
    throw compileError(text, locationOf(rest), `the ${what} source must be exactly one function, but it goes on after the function ends: ${JSON.stringify(source.slice(expr.end - 1, expr.end + 39))}`);
  }
  return finish(text, name, expr, what);
}

/**
 * How deeply expressions and statements may nest in a kernel. Every stage after the parser
 * (lowering, typing, passes, the code generators, WGSL's own compiler) walks the tree recursively;
 * a limit here keeps them all far from the call stack's end, so that a deeply nested kernel gets
 * this error instead of a `RangeError` from somewhere inside.
 */
export const MAX_NESTING = 400;

/** The nesting depth of an ESTree, measured without recursion (depth-first with an explicit stack). */
function nestingDepth(root: EsNode): { depth: number; deepest: EsNode } {
  const stack: [EsNode, number][] = [[root, 1]];
  let depth = 0;
  let deepest = root;
  while (stack.length > 0) {
    const [node, d] = stack.pop()!;
    if (d > depth) {
      depth = d;
      deepest = node;
    }
    for (const key of Object.keys(node)) {
      if (key === 'loc') continue;
      const value = node[key] as unknown;
      for (const child of Array.isArray(value) ? value : [value]) if (isNode(child)) stack.push([child, d + 1]);
    }
  }
  return { depth, deepest };
}

function checkNesting(text: KernelText, node: EsNode, what: string): void {
  const { depth, deepest } = nestingDepth(node);
  if (depth > MAX_NESTING) {
    throw compileError(text, locationOf(deepest), `the ${what} nests ${depth} levels deep (expressions and statements within each other); at most ${MAX_NESTING} are supported: split it with \`const\` locals or helper functions`);
  }
}

/**
 * Istanbul (Jest's default coverage, `--coverage.provider=istanbul`, nyc) rewrites functions with
 * counters that are not kernel language. Counting is all they do, so they are left out, and the
 * kernel compiles as written:
 *
 *     function f(x) { cov_1x().f[0]++; cov_1x().s[1]++; return x > 0 ? (cov_1x().b[0][0]++, x) : (cov_1x().b[0][1]++, 0); }
 *     // is read as
 *     function f(x) { return x > 0 ? x : 0; }
 *
 * A counter is `cov_…()` (the counters' accessor), `cov_…().s[N]++`, `cov_…().f[N]++` or
 * `cov_…().b[N][M]++`: as a statement of its own, or an element of a comma expression.
 * Any other use of `cov_…` is refused with what to do.
 */
const COVERAGE_ACCESSOR = /^cov_[0-9a-z]+$/i;

function isCoverageCounter(node: EsNode): boolean {
  let target = node.type === 'UpdateExpression' ? (node.argument as EsNode) : node;
  while (target.type === 'MemberExpression') target = target.object as EsNode;
  return target.type === 'CallExpression' && target.arguments.length === 0 && target.callee.type === 'Identifier' && COVERAGE_ACCESSOR.test(target.callee.name);
}

function stripCoverageCounters(node: EsNode): EsNode {
  for (const key of Object.keys(node)) {
    if (key === 'loc') continue;
    const value = node[key] as unknown;
    if (Array.isArray(value)) {
      // Statement lists (blocks, `case` bodies): counters as statements of their own go.
      const kept = value.filter((child: unknown) => !(isNode(child) && child.type === 'ExpressionStatement' && isCoverageCounter(child.expression)));
      node[key] = kept.map((child: unknown) => (isNode(child) ? stripCoverageCounters(child) : child));
    } else if (isNode(value)) {
      node[key] = stripCoverageCounters(value);
    }
  }
  if (node.type === 'SequenceExpression') {
    const kept = (node.expressions as EsNode[]).filter((e) => !isCoverageCounter(e));
    if (kept.length === 1) return kept[0]!;
    node.expressions = kept;
  }
  // `if (c) cov().b[0][0]++;` leaves an empty branch; an empty statement keeps the `if` valid.
  if (node.type === 'ExpressionStatement' && isCoverageCounter(node.expression)) return { ...node, type: 'EmptyStatement' } as EsNode;
  return node;
}

function isNode(value: unknown): value is EsNode {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}

function firstCoverageAccessor(node: EsNode): EsNode | undefined {
  if (node.type === 'Identifier' && COVERAGE_ACCESSOR.test(node.name)) return node;
  for (const key of Object.keys(node)) {
    if (key === 'loc') continue;
    const value = node[key] as unknown;
    for (const child of Array.isArray(value) ? value : [value]) {
      const found = isNode(child) ? firstCoverageAccessor(child) : undefined;
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * Transpilers call an imported function as `(0, f)(…)` or `(0, ns.f)(…)`, so that `this` is
 * undefined in the call (TypeScript's CommonJS output `(0, helpers_1.f)(x)`, esbuild's
 * `(0, import_helpers.f)(x)`, vitest's module runner `(0,f)(x)`): a helper the user imported and
 * called as `f(x)` arrives in that form. Kernels have no `this`, so it is read as the call `f(x)`
 * the user wrote — `f` is still looked up in `env` by that name.
 */
function isIndirectCallee(node: EsNode): boolean {
  if (node.type !== 'SequenceExpression' || node.expressions.length !== 2) return false;
  const [zero, fn] = node.expressions as EsNode[];
  if (zero!.type !== 'Literal' || zero!.value !== 0) return false;
  return fn!.type === 'Identifier' || (fn!.type === 'MemberExpression' && !fn!.computed && fn!.object.type === 'Identifier');
}

function unwrapIndirectCalls(node: EsNode): void {
  for (const key of Object.keys(node)) {
    if (key === 'loc') continue;
    const value = node[key] as unknown;
    for (const child of Array.isArray(value) ? value : [value]) if (isNode(child)) unwrapIndirectCalls(child);
  }
  if (node.type === 'CallExpression' && isIndirectCallee(node.callee)) {
    const fn = node.callee.expressions[1] as EsNode;
    node.callee = fn.type === 'Identifier' ? fn : fn.property;
  }
}

function finish(text: KernelText, name: string, parsed: EsNode, what: string): ParsedFunction {
  const { source, fn } = text;
  checkNesting(text, parsed, what);
  let node = parsed;
  if (/\(\s*0\s*,/.test(source)) unwrapIndirectCalls(node);
  if (/\bcov_[0-9a-z]+\(\)/i.test(source)) {
    node = stripCoverageCounters(node);
    const left = firstCoverageAccessor(node);
    if (left) {
      throw compileError(
        text,
        locationOf(left),
        `the ${what} was instrumented for code coverage, and \`${left.name}\` is used here in a way that is not one of Istanbul's counters, so it cannot be left out. ` +
          'Exclude the file that defines it from instrumentation (`/* istanbul ignore file */` at its top, or your test runner\'s `coverage.exclude`), ' +
          'use V8 coverage (`vitest --coverage.provider=v8`, `c8`, Jest\'s `coverageProvider: "v8"`), which leaves the source alone, or pass the kernel as source text',
      );
    }
  }
  if (node.async) throw compileError(text, locationOf(node), '`async` functions are not supported in kernels: a kernel computes synchronously');
  if (node.generator) throw compileError(text, locationOf(node), 'generator functions are not supported in kernels');
  const params = (node.params as EsNode[]).map((p) => {
    if (p.type !== 'Identifier') {
      throw compileError(text, locationOf(p), `parameter \`${source.slice(p.start - 1, p.end - 1)}\` must be a plain name (no defaults, destructuring or rest)`);
    }
    return p.name as string;
  });
  return { source, name: name || 'kernel', node, params, ...(fn ? { fn } : {}) };
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
