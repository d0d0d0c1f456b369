/**
 * A ufunc as data: the kernel's source text, its signatures, layout, options and `env` (helpers as
 * source text, constants, lookup tables), in a JSON object named by the SHA-256 of its canonical
 * form. A descriptor is what travels to other processes and machines; whoever receives one builds
 * the ufunc with `vectorize`/`guvectorize` from the text, so the kernel goes through the compiler
 * (parsed, typed, lowered to the IR) and nothing of it is ever evaluated as JavaScript.
 *
 * `validateDescriptor` is the gate for descriptors that come from outside the process: it checks
 * every field's type, the sizes, and that nothing unknown rides along, before any of it is parsed.
 */
import { createHash } from 'node:crypto';
import { definitionOf } from '../callable.js';
import { guvectorize } from '../guvectorize/index.js';
import type { UfuncOptions } from '../ufunc.js';
import { vectorize } from '../vectorize/index.js';
import { DescriptorError } from './errors.js';

/** The version tag every descriptor carries; a receiver refuses any other. */
export const DESCRIPTOR_FORMAT = 'ufunc-descriptor/1';

/** The lookup-table dtypes a descriptor's `env` may carry, with their typed arrays. */
const ARRAY_DTYPES = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, int16: Int16Array, int32: Int32Array,
  uint8: Uint8Array, uint8c: Uint8ClampedArray, uint16: Uint16Array, uint32: Uint32Array,
} as const;
type ArrayDType = keyof typeof ARRAY_DTYPES;

/** A number that JSON cannot hold as a number travels as one of these strings. */
type SpecialNumber = 'NaN' | 'Infinity' | '-Infinity' | '-0';

/** One `env` entry as it travels. */
export type EnvEntry =
  | { readonly kind: 'number'; readonly value: number | SpecialNumber }
  | { readonly kind: 'bigint'; readonly value: string }
  | { readonly kind: 'boolean'; readonly value: boolean }
  | { readonly kind: 'helper'; readonly source: string }
  | { readonly kind: 'array'; readonly dtype: ArrayDType; readonly base64: string };

/** The options that change what a kernel computes; `target` is the receiver's choice. */
export interface DescriptorOptions {
  readonly boundsCheck?: boolean;
  readonly identity?: { readonly kind: 'number'; readonly value: number | SpecialNumber } | { readonly kind: 'bigint'; readonly value: string } | { readonly kind: 'boolean'; readonly value: boolean };
  readonly float64?: 'error' | 'float32';
  readonly associative?: boolean;
  readonly fastmath?: boolean;
}

export interface UfuncDescriptor {
  readonly format: typeof DESCRIPTOR_FORMAT;
  readonly kind: 'vectorize' | 'guvectorize';
  /** The kernel's source text, as `fn.toString()` gave it. */
  readonly source: string;
  /** The declared signatures (none for a lazy vectorize, which compiles one per input dtype tuple). */
  readonly signatures: readonly string[];
  /** The layout, e.g. `(n)->(n)`; a vectorize ufunc's is `(),()->()`. */
  readonly layout: string;
  readonly options: DescriptorOptions;
  readonly env: Readonly<Record<string, EnvEntry>>;
}

/** How large a descriptor from outside may be; anything larger is refused before it is parsed. */
export interface DescriptorLimits {
  /** The descriptor's JSON text, in bytes. @default 16 MiB */
  readonly maxBytes: number;
  /** The kernel's and every helper's source text, together, in characters. @default 1 MiB */
  readonly maxSourceChars: number;
  /** How many signatures and how many `env` entries. @default 256 */
  readonly maxEntries: number;
}

export const DEFAULT_DESCRIPTOR_LIMITS: DescriptorLimits = { maxBytes: 16 << 20, maxSourceChars: 1 << 20, maxEntries: 256 };

/**
 * The descriptor of a ufunc made by `vectorize` or `guvectorize`.
 *
 * @param f - the ufunc
 * @returns the descriptor; `descriptorHash(d)` names it
 * @throws DescriptorError when `f` is not such a ufunc, or its `env` holds something that cannot
 *   travel (an object, a closure's state)
 * @example
 * const d = describeUfunc(vectorize(['float32(float32)'])((x) => 2 * x));
 * const again = ufuncFromDescriptor(d, 'parallel');
 */
export function describeUfunc(f: unknown): UfuncDescriptor {
  const def = definitionOf(f);
  if (!def) throw new DescriptorError(`Only a ufunc made by \`vectorize\` or \`guvectorize\` has a descriptor; found ${typeof f === 'function' ? 'another function' : typeof f}.`);
  const env: Record<string, EnvEntry> = {};
  for (const [name, value] of Object.entries(def.env)) env[name] = encodeEnvEntry(name, value);
  const o = def.options;
  const options: DescriptorOptions = {
    ...(o.boundsCheck !== undefined && { boundsCheck: o.boundsCheck }),
    ...(o.identity !== undefined && { identity: encodeScalar('`identity`', o.identity) }),
    ...(o.float64 !== undefined && { float64: o.float64 }),
    ...(o.associative !== undefined && { associative: o.associative }),
    ...(o.fastmath !== undefined && { fastmath: o.fastmath }),
  };
  return {
    format: DESCRIPTOR_FORMAT,
    kind: def.kind,
    source: def.parsed.source,
    signatures: [...def.declaredSignatures],
    layout: def.layout.text,
    options,
    env,
  };
}

/** The SHA-256 (hex) of the descriptor's canonical JSON: equal descriptors, equal names. */
export function descriptorHash(d: UfuncDescriptor): string {
  return createHash('sha256').update(canonicalJson(d)).digest('hex');
}

/** The descriptor as JSON with object keys sorted, so its text (and hash) depends on content alone. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, (v as Record<string, unknown>)[k]]))
      : v,
  );
}

/**
 * Builds the ufunc a descriptor describes, on `target`. The kernel and its helpers are compiled
 * from their text like any kernel given as a string: what the kernel language refuses is a
 * `KernelCompileError`, and nothing is evaluated as written.
 */
export function ufuncFromDescriptor(d: UfuncDescriptor, target: string) {
  const env: Record<string, unknown> = {};
  for (const [name, entry] of Object.entries(d.env)) env[name] = decodeEnvEntry(entry);
  const o = d.options;
  const options = {
    target,
    env,
    ...(o.boundsCheck !== undefined && { boundsCheck: o.boundsCheck }),
    ...(o.identity !== undefined && { identity: decodeScalar(o.identity) as number | bigint | boolean }),
    ...(o.float64 !== undefined && { float64: o.float64 }),
    ...(o.associative !== undefined && { associative: o.associative }),
    ...(o.fastmath !== undefined && { fastmath: o.fastmath }),
  } as UfuncOptions;
  return d.kind === 'vectorize' ? vectorize(d.signatures, options)(d.source) : guvectorize(d.signatures, d.layout, options)(d.source);
}

/**
 * Checks a descriptor that came from outside (JSON text or its parse) field by field, with the
 * sizes of `limits`, and returns it typed. Nothing of it is parsed as code here.
 *
 * @throws DescriptorError naming the first field that is wrong, what was expected and what was found
 */
export function validateDescriptor(input: unknown, limits: DescriptorLimits = DEFAULT_DESCRIPTOR_LIMITS): UfuncDescriptor {
  let raw = input;
  if (typeof input === 'string') {
    if (Buffer.byteLength(input) > limits.maxBytes) throw new DescriptorError(`The descriptor is ${Buffer.byteLength(input)} bytes; at most ${limits.maxBytes} are accepted.`);
    try {
      raw = JSON.parse(input);
    } catch (e) {
      throw new DescriptorError(`The descriptor is not JSON: ${(e as Error).message}.`);
    }
  }
  const d = record(raw, 'the descriptor', ['format', 'kind', 'source', 'signatures', 'layout', 'options', 'env']);
  if (d.format !== DESCRIPTOR_FORMAT) throw new DescriptorError(`\`format\` must be '${DESCRIPTOR_FORMAT}', found ${show(d.format)}.`);
  if (d.kind !== 'vectorize' && d.kind !== 'guvectorize') throw new DescriptorError(`\`kind\` must be 'vectorize' or 'guvectorize', found ${show(d.kind)}.`);
  let sourceChars = text(d.source, '`source`', limits.maxSourceChars).length;
  const signatures = list(d.signatures, '`signatures`', limits.maxEntries).map((s, i) => text(s, `\`signatures[${i}]\``, 4096));
  const layout = text(d.layout, '`layout`', 4096);
  const opts = record(d.options, '`options`', ['boundsCheck', 'identity', 'float64', 'associative', 'fastmath']);
  for (const key of ['boundsCheck', 'associative', 'fastmath'] as const) {
    if (opts[key] !== undefined && typeof opts[key] !== 'boolean') throw new DescriptorError(`\`options.${key}\` must be a boolean, found ${show(opts[key])}.`);
  }
  if (opts.float64 !== undefined && opts.float64 !== 'error' && opts.float64 !== 'float32') throw new DescriptorError(`\`options.float64\` must be 'error' or 'float32', found ${show(opts.float64)}.`);
  if (opts.identity !== undefined) checkScalarEntry(opts.identity, '`options.identity`');
  const env = record(d.env, '`env`', undefined);
  const names = Object.keys(env);
  if (names.length > limits.maxEntries) throw new DescriptorError(`\`env\` has ${names.length} entries; at most ${limits.maxEntries} are accepted.`);
  for (const name of names) {
    if (!/^[A-Za-z_$][\w$]*$/.test(name) || name === '__proto__' || name === 'constructor' || name === 'prototype') {
      throw new DescriptorError(`\`env\` entry ${show(name)} is not a name a kernel can use (letters, digits, \`_\` and \`$\`, not starting with a digit; not \`__proto__\`, \`constructor\` or \`prototype\`).`);
    }
    const where = `\`env.${name}\``;
    const e = record(env[name], where, undefined);
    if (e.kind === 'helper') {
      record(e, where, ['kind', 'source']);
      sourceChars += text(e.source, `${where}.source`, limits.maxSourceChars).length;
    } else if (e.kind === 'array') {
      record(e, where, ['kind', 'dtype', 'base64']);
      if (typeof e.dtype !== 'string' || !Object.hasOwn(ARRAY_DTYPES, e.dtype)) throw new DescriptorError(`${where}.dtype must be one of ${Object.keys(ARRAY_DTYPES).join(', ')}, found ${show(e.dtype)}.`);
      const b64 = text(e.base64, `${where}.base64`, limits.maxBytes);
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) throw new DescriptorError(`${where}.base64 is not base64 text.`);
      const bytes = Buffer.from(b64, 'base64').byteLength;
      if (bytes % ARRAY_DTYPES[e.dtype as ArrayDType].BYTES_PER_ELEMENT !== 0) throw new DescriptorError(`${where} holds ${bytes} bytes, not a whole number of ${e.dtype as string} elements.`);
    } else {
      checkScalarEntry(e, where);
    }
  }
  if (sourceChars > limits.maxSourceChars) throw new DescriptorError(`The kernel and its helpers are ${sourceChars} characters of source together; at most ${limits.maxSourceChars} are accepted.`);
  return { format: DESCRIPTOR_FORMAT, kind: d.kind, source: d.source as string, signatures, layout, options: opts as DescriptorOptions, env: env as Record<string, EnvEntry> };
}

function encodeEnvEntry(name: string, value: unknown): EnvEntry {
  if (typeof value === 'function' || typeof value === 'string') return { kind: 'helper', source: typeof value === 'string' ? value : value.toString() };
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    const dtype = (Object.keys(ARRAY_DTYPES) as ArrayDType[]).find((k) => value.constructor === ARRAY_DTYPES[k]);
    if (dtype) return { kind: 'array', dtype, base64: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
  }
  return encodeScalar(`\`env.${name}\``, value);
}

function encodeScalar(where: string, value: unknown): EnvEntry & { kind: 'number' | 'bigint' | 'boolean' } {
  if (typeof value === 'number') {
    const special: SpecialNumber | undefined = Number.isNaN(value) ? 'NaN' : value === Infinity ? 'Infinity' : value === -Infinity ? '-Infinity' : Object.is(value, -0) ? '-0' : undefined;
    return { kind: 'number', value: special ?? value };
  }
  if (typeof value === 'bigint') return { kind: 'bigint', value: value.toString() };
  if (typeof value === 'boolean') return { kind: 'boolean', value };
  throw new DescriptorError(`${where} cannot travel in a descriptor: only numbers, bigints, booleans, helper functions (or their source text) and typed arrays can; found ${show(value)}.`);
}

function decodeEnvEntry(e: EnvEntry): unknown {
  switch (e.kind) {
    case 'helper': return e.source;
    case 'array': {
      const bytes = Buffer.from(e.base64, 'base64');
      const Ctor = ARRAY_DTYPES[e.dtype];
      // A copy, aligned for its element size (a Buffer's own offset may not be).
      return new Ctor(new Uint8Array(bytes).buffer);
    }
    default: return decodeScalar(e);
  }
}

function decodeScalar(e: { kind: string; value: unknown }): number | bigint | boolean {
  if (e.kind === 'bigint') return BigInt(e.value as string);
  if (e.kind === 'boolean') return e.value as boolean;
  switch (e.value) {
    case 'NaN': return NaN;
    case 'Infinity': return Infinity;
    case '-Infinity': return -Infinity;
    case '-0': return -0;
    default: return e.value as number;
  }
}

function checkScalarEntry(value: unknown, where: string): void {
  const e = record(value, where, ['kind', 'value']);
  const ok =
    (e.kind === 'number' && ((typeof e.value === 'number' && Number.isFinite(e.value)) || ['NaN', 'Infinity', '-Infinity', '-0'].includes(e.value as string))) ||
    (e.kind === 'bigint' && typeof e.value === 'string' && /^-?\d{1,20}$/.test(e.value)) ||
    (e.kind === 'boolean' && typeof e.value === 'boolean');
  if (!ok) throw new DescriptorError(`${where} must be a number, bigint, boolean, helper or array entry, found ${show(value)}.`);
}

/** `value` as a plain object with only the keys of `allowed` (any keys when undefined). */
function record(value: unknown, where: string, allowed: readonly string[] | undefined): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || Object.getPrototypeOf(value) !== Object.prototype) {
    throw new DescriptorError(`${where} must be a plain object, found ${show(value)}.`);
  }
  if (allowed) {
    const extra = Object.keys(value).find((k) => !allowed.includes(k));
    if (extra !== undefined) throw new DescriptorError(`${where} has an unknown field ${show(extra)}; its fields are ${allowed.join(', ')}.`);
  }
  return value as Record<string, unknown>;
}

function list(value: unknown, where: string, max: number): unknown[] {
  if (!Array.isArray(value)) throw new DescriptorError(`${where} must be an array, found ${show(value)}.`);
  if (value.length > max) throw new DescriptorError(`${where} has ${value.length} entries; at most ${max} are accepted.`);
  return value;
}

function text(value: unknown, where: string, max: number): string {
  if (typeof value !== 'string') throw new DescriptorError(`${where} must be a string, found ${show(value)}.`);
  if (value.length > max) throw new DescriptorError(`${where} is ${value.length} characters long; at most ${max} are accepted.`);
  return value;
}

function show(value: unknown): string {
  if (typeof value === 'string') return value.length > 40 ? `'${value.slice(0, 40)}…'` : `'${value}'`;
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'function') return 'a function';
  return `${typeof value} ${String(value)}`;
}
