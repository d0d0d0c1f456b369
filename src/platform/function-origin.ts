/**
 * Where a function given as a kernel was written, in Node. A kernel's positions are positions in
 * `fn.toString()`, the text V8 runs — the user's own text only when nothing transformed their
 * module. tsx, Vite and vitest, ts-node and bundlers strip types, rename and reformat: tsx prints
 * `(x: number): number => {⏎  const y = x * 2; …` as `x=>{const y=x*2;…` on one line.
 *
 * V8's inspector says which script holds the function and where (`[[FunctionLocation]]`), and
 * gives that script's text and its source map's URL. The map — inline (`data:`, as esbuild, tsx
 * and Vite write it) or a `.map` file beside the script, or the one Node keeps with
 * `--enable-source-maps` — leads to the line in the user's file; Node's own `SourceMap` decodes it.
 * A script without a map is the user's file when the file on disk holds the function's text where
 * V8 has it; otherwise the position is in code some tool made, and the message says so.
 *
 * Nothing here runs unless an error message is read (parse.ts makes them lazily): the inspector
 * round trip costs about a millisecond, and listing the scripts of a large program tens.
 */
import { readFileSync } from 'node:fs';
import { createRequire, findSourceMap, SourceMap } from 'node:module';
import { isAbsolute, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { SourceLocation } from '../errors.js';
import type { FilePosition, FunctionOrigin } from './platform.js';

type Inspector = typeof import('node:inspector');
type Post = (method: string, params?: object) => Record<string, unknown> | undefined;
type ScriptParsed = { readonly params: { readonly scriptId: string; readonly url: string; readonly sourceMapURL?: string } };
/** An inspector session on this thread: `post` answers synchronously; `onScriptParsed` hears the debugger's list of scripts. */
interface Session {
  readonly post: Post;
  onScriptParsed(listener: (message: ScriptParsed) => void): void;
}

/** A script V8 compiled: its address and text, and the source map its text names (decoded once). */
interface Script {
  readonly url: string;
  readonly source: string;
  readonly sourceMapUrl: string;
  /** Offsets of the first character of each line of `source`. */
  readonly lineStarts: readonly number[];
  map?: { readonly map: SourceMap; readonly base: string } | null;
}

let inspector: Inspector | null | undefined;
/** Scripts by V8's script id (unique in an isolate, never reused); the last few looked up. */
const scripts = new Map<string, Script>();
const KEPT_SCRIPTS = 16;

/**
 * Where `fn` was written.
 *
 * @param fn - a kernel or helper function
 * @returns its origin, or undefined where it cannot be told (no inspector, a native function, a
 *   script V8 no longer has)
 * @example
 * functionOrigin((x) => x + 1)?.position({ line: 1, column: 8 }); // { file: 'app.js', line: 12, column: 17, text: '…' }
 */
export function functionOrigin(fn: Function): FunctionOrigin | undefined {
  try {
    return withSession((session) => {
      const where = functionLocation(fn, session.post);
      if (!where) return undefined;
      const script = scriptOf(where.scriptId, session);
      if (!script) return undefined;
      const text = Function.prototype.toString.call(fn);
      // V8 places a function at its parameters; its text starts earlier for `function f(` or `async`.
      const at = (script.lineStarts[where.lineNumber] ?? 0) + where.columnNumber;
      const start = script.source.lastIndexOf(text, at);
      if (start < 0 || start + text.length <= at) return undefined;
      return originIn(script, start, text);
    });
  } catch {
    return undefined; // messages never fail because their position could not be found
  }
}

function originIn(script: Script, start: number, text: string): FunctionOrigin | undefined {
  const first = lineColumn(script.lineStarts, start);
  /** 0-based line and column in the script of a 1-based position in the function's text. */
  const generated = (loc: SourceLocation) =>
    loc.line === 1 ? { line: first.line, column: first.column + loc.column - 1 } : { line: first.line + loc.line - 1, column: loc.column - 1 };
  const mapped = sourceMapOf(script);
  if (mapped) {
    return { kind: 'file', position: (loc) => mappedPosition(script, mapped.map, mapped.base, generated(loc)) };
  }
  const path = filePath(script.url);
  const onDisk = path === undefined ? undefined : readText(path);
  if (path !== undefined && onDisk !== undefined && onDisk.startsWith(text, start)) {
    const lines = onDisk.split('\n');
    return {
      kind: 'file',
      position: (loc) => {
        const { line, column } = generated(loc);
        return { file: displayPath(path), line: line + 1, column: column + 1, text: lines[line] ?? '' };
      },
    };
  }
  return { kind: 'transformed', file: path === undefined ? script.url : displayPath(path) };
}

/** The user's position of a 0-based script position, through the script's source map. */
function mappedPosition(script: Script, map: SourceMap, base: string, at: { line: number; column: number }): FilePosition | undefined {
  const entry = map.findEntry(at.line, at.column) as Partial<import('node:module').SourceMapping>; // {} where no entry
  if (entry.originalSource === undefined || entry.originalLine === undefined || entry.originalColumn === undefined) return undefined;
  const payload = map.payload as { sources?: string[]; sourcesContent?: (string | null)[]; sourceRoot?: string };
  const index = payload.sources?.indexOf(entry.originalSource) ?? -1;
  const url = resolveUrl(`${payload.sourceRoot ?? ''}${entry.originalSource}`, base);
  const path = filePath(url);
  const original = (index >= 0 ? payload.sourcesContent?.[index] : undefined) ?? (path === undefined ? undefined : readText(path));
  const line = original?.split('\n')[entry.originalLine]?.replace(/\r$/, '') ?? '';
  // A map marks tokens, not characters: a position inside a token maps to the token's start. Step
  // on from there only over the same text, so that the caret never lands on another token.
  let column = entry.originalColumn;
  if (entry.generatedLine === at.line && entry.generatedColumn !== undefined && entry.generatedColumn < at.column) {
    const generatedLine = script.source.slice(script.lineStarts[at.line], script.lineStarts[at.line + 1]);
    const between = generatedLine.slice(entry.generatedColumn, at.column);
    if (line.startsWith(between, column)) column += between.length;
  }
  return { file: path === undefined ? url : displayPath(path), line: entry.originalLine + 1, column: column + 1, text: line };
}

/** The source map a script names, decoded; null when it names none or it cannot be read. */
function sourceMapOf(script: Script): { map: SourceMap; base: string } | null {
  if (script.map !== undefined) return script.map;
  script.map = null;
  const kept = findSourceMap(script.url);
  if (kept) return (script.map = { map: kept, base: script.url });
  const named = script.sourceMapUrl || /\/\/[#@] sourceMappingURL=(\S+)\s*$/.exec(script.source)?.[1] || '';
  if (!named) return null;
  let json: string | undefined;
  let base = script.url;
  const data = /^data:application\/json(?:;charset=[\w-]+)?(;base64)?,(.*)$/is.exec(named);
  if (data) {
    json = data[1] ? Buffer.from(data[2]!, 'base64').toString('utf8') : decodeURIComponent(data[2]!);
  } else {
    base = resolveUrl(named, script.url);
    const path = filePath(base);
    json = path === undefined ? undefined : readText(path);
  }
  if (json === undefined) return null;
  script.map = { map: new SourceMap(JSON.parse(json) as ConstructorParameters<typeof SourceMap>[0]), base };
  return script.map;
}

/** Runs `body` with a connected inspector session whose `post` answers synchronously (same thread). */
function withSession<T>(body: (session: Session) => T): T | undefined {
  inspector ??= loadInspector();
  if (!inspector) return undefined;
  const session = new inspector.Session();
  session.connect();
  try {
    return body({
      post: (method, params) => {
        let answer: Record<string, unknown> | undefined;
        let failure: Error | null = null;
        session.post(method, params, (error, result) => {
          failure = error;
          answer = result as Record<string, unknown>;
        });
        if (failure) throw failure;
        return answer;
      },
      onScriptParsed: (listener) => session.on('Debugger.scriptParsed', listener as (message: unknown) => void),
    });
  } finally {
    session.disconnect();
  }
}

function loadInspector(): Inspector | null {
  try {
    return createRequire(import.meta.url)('node:inspector') as Inspector; // absent from Node built without it
  } catch {
    return null;
  }
}

interface FunctionLocation {
  readonly scriptId: string;
  readonly lineNumber: number;
  readonly columnNumber: number;
}

/** V8's `[[FunctionLocation]]` of `fn`, reached through a global name held for the moment. */
function functionLocation(fn: Function, post: Post): FunctionLocation | undefined {
  const scope = globalThis as Record<string, unknown>;
  const name = `__ufuncFunctionOrigin${Math.random().toString(36).slice(2)}`;
  scope[name] = fn;
  try {
    const value = post('Runtime.evaluate', { expression: `globalThis.${name}` })?.result as { objectId?: string } | undefined;
    if (!value?.objectId) return undefined;
    const props = post('Runtime.getProperties', { objectId: value.objectId, ownProperties: true });
    post('Runtime.releaseObject', { objectId: value.objectId });
    const internal = props?.internalProperties as { name: string; value?: { value?: FunctionLocation } }[] | undefined;
    return internal?.find((p) => p.name === '[[FunctionLocation]]')?.value?.value;
  } finally {
    delete scope[name];
  }
}

/** A script's address and text; the debugger is enabled only for as long as this takes. */
function scriptOf(scriptId: string, session: Session): Script | undefined {
  const known = scripts.get(scriptId);
  if (known) return known;
  let url = '';
  let sourceMapUrl = '';
  session.onScriptParsed(({ params }) => {
    if (params.scriptId !== scriptId) return;
    url = params.url;
    sourceMapUrl = params.sourceMapURL ?? '';
  });
  let source: string | undefined;
  try {
    session.post('Debugger.enable'); // lists every script to this session, ours among them
    source = session.post('Debugger.getScriptSource', { scriptId })?.scriptSource as string | undefined;
  } finally {
    session.post('Debugger.disable');
  }
  if (source === undefined || url === '') return undefined;
  const lineStarts = [0];
  for (let k = source.indexOf('\n'); k >= 0; k = source.indexOf('\n', k + 1)) lineStarts.push(k + 1);
  const script: Script = { url, source, sourceMapUrl, lineStarts };
  if (scripts.size >= KEPT_SCRIPTS) scripts.delete(scripts.keys().next().value!);
  scripts.set(scriptId, script);
  return script;
}

function lineColumn(lineStarts: readonly number[], offset: number): { line: number; column: number } {
  let lo = 0;
  let hi = lineStarts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (lineStarts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo, column: offset - lineStarts[lo]! };
}

function resolveUrl(url: string, base: string): string {
  try {
    return new URL(url, isAbsolute(base) ? pathToFileURL(base) : base).href;
  } catch {
    return url;
  }
}

/** The path of a `file:` URL or an absolute path; undefined for other addresses. */
function filePath(url: string): string | undefined {
  if (url.startsWith('file:')) {
    try {
      return fileURLToPath(url);
    } catch {
      return undefined;
    }
  }
  return isAbsolute(url) ? url : undefined;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** A path as the user would type it: relative to the working directory when inside it. */
function displayPath(path: string): string {
  const inside = relative(process.cwd(), path);
  return inside && !inside.startsWith('..') && !isAbsolute(inside) ? inside : path;
}
