/**
 * The Wasm engine's table of how it computes each `Math` function (math-support.ts) and its ports
 * of V8's algorithms (math-ports.ts) agree: a function the table runs as a port has one, of an
 * arity the function takes, with its scalar entry among the ports' functions; no other has one.
 */
import { describe, expect, it } from 'vitest';
import { MATH, type MathFunction } from '../../../../src/compiler/math-functions.js';
import { MATH_PORTS, PORT_FUNCTIONS, scalarEntry } from '../../../../src/targets/cpu/wasm/math-ports.js';
import { WASM_MATH } from '../../../../src/targets/cpu/wasm/math-support.js';

describe('Wasm ports of Math functions', () => {
  it.each(Object.keys(MATH) as MathFunction[])('Math.%s: a port exactly where math-support.ts says so', (fn) => {
    const port = MATH_PORTS[fn];
    const table = WASM_MATH[fn];
    expect(port !== undefined).toBe(table.scalar === 'port');
    expect(port !== undefined).toBe(table.floatLanes === 'port');
    if (!port) return;
    const [fewest, most] = MATH[fn].arity;
    expect(port.arity >= fewest && port.arity <= most).toBe(true);
    const entry = PORT_FUNCTIONS[scalarEntry(fn)]!;
    expect(entry.results).toEqual([0x7c]); // one f64
    expect(entry.params.slice(0, port.arity)).toEqual(Array(port.arity).fill(0x7c));
  });
});
