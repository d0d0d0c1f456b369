/**
 * Finding out whether a helper is one of the runtime's own functions must not run any getter of the
 * global objects: Node's accessors have side effects (`process.stdin` opens fd 0, `process._channel`
 * prints a deprecation warning, `crypto` loads a module). This file is its own process, so the
 * collection of built-ins happens here for the first time.
 */
import { afterAll, expect, it } from 'vitest';
import { KernelCompileError, vectorize } from '../../src/index.js';

const reads: string[] = [];
const probe = { plain: 1 };
Object.defineProperty(probe, 'watched', { get: () => (reads.push('probe.watched'), () => 0), enumerable: true });
Object.defineProperty(globalThis, '__ufuncProbeAccessor', { get: () => (reads.push('globalThis.__ufuncProbeAccessor'), probe), configurable: true });
Object.defineProperty(globalThis, '__ufuncProbeData', { value: probe, configurable: true, writable: true });

afterAll(() => {
  delete (globalThis as Record<string, unknown>).__ufuncProbeAccessor;
  delete (globalThis as Record<string, unknown>).__ufuncProbeData;
});

declare const ex: (x: number) => number;

it('recognises a built-in helper without reading any accessor of the global objects', () => {
  const compile = (helper: unknown) => () =>
    vectorize(['float64(float64)'], { target: 'cpu', env: { ex: helper as never } })((x: number) => ex(x));
  expect(compile(process.exit)).toThrow(KernelCompileError);
  expect(compile(console.log)).toThrow(/native or bound function, or a built-in/);
  expect(reads).toEqual([]);
  expect(compile((x: number) => x + 1)).not.toThrow();
});
