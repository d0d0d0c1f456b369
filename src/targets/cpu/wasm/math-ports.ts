/**
 * The `Math` functions the Wasm engine computes itself, keyed by name: ports of V8's own
 * algorithms (fdlibm's, src/base/ieee754.cc), bit-identical to V8's `Math.*`. Each family lives in
 * its own module and adds its entries here; a function without an entry calls V8's `Math.*`
 * through an import (one call out of Wasm per element).
 *
 * A port has two parts:
 * - Wasm functions of the module (`PortFunction`, named `fdlibm:…`): the scalar entry
 *   `fdlibm:<name>`, taking `arity` doubles and returning one, and any helpers it shares with
 *   other ports (`fdlibm:rem_pio2`). The module defines only those a kernel needs.
 * - `lanes`: code that replaces vectors on the stack by the function of each lane, in SIMD where
 *   it can, falling back to the scalar entry lane by lane for rare inputs.
 */
import type { MathFunction } from '../../../compiler/ir.js';
import type { MathPort, PortFunction } from './math-port.js';
import { EXP_FUNCTIONS, EXP_PORTS } from './fdlibm.js';
import { INVERSE_TRIG_FUNCTIONS, INVERSE_TRIG_PORTS } from './inverse-trig.js';
import { TRIG_FUNCTIONS, TRIG_PORTS } from './trig.js';
import { LOG_POWER_FUNCTIONS, LOG_POWER_PORTS } from './math/ports.js';

/** Every port, by `Math` function name. */
export const MATH_PORTS: Partial<Record<MathFunction, MathPort>> = { ...EXP_PORTS, ...TRIG_PORTS, ...INVERSE_TRIG_PORTS, ...LOG_POWER_PORTS };

/** Every function ports add to modules, by name. */
export const PORT_FUNCTIONS: Readonly<Record<string, PortFunction>> = { ...EXP_FUNCTIONS, ...TRIG_FUNCTIONS, ...INVERSE_TRIG_FUNCTIONS, ...LOG_POWER_FUNCTIONS };

/** The name of a port's scalar entry. */
export function scalarEntry(fn: MathFunction): string {
  return `fdlibm:${fn}`;
}

/** Whether `name` is a function a port adds (else it is an import). */
export function isPortFunction(name: string): boolean {
  return name.startsWith('fdlibm:');
}


