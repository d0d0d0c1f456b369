/**
 * Errors that cross from a worker to the calling thread. A worker can only send an error's class
 * name and message (through shared memory); the calling thread rebuilds it as the same class, so
 * a kernel's error reads the same on the parallel target as on the cpu target.
 */
import * as errors from '../../errors.js';
import { KernelRuntimeError, UfuncError } from '../../errors.js';

export { WorkerError } from '../../errors.js';

const BUILT_IN_ERRORS: Readonly<Record<string, new (message: string) => Error>> = {
  Error, RangeError, TypeError, ReferenceError, SyntaxError, EvalError, URIError,
};

/** The library's error classes by name: every export of errors.ts that extends UfuncError. */
const UFUNC_ERRORS: Readonly<Record<string, new (message: string) => Error>> = Object.fromEntries(
  Object.values(errors)
    .filter((value): value is typeof UfuncError => typeof value === 'function' && (value === UfuncError || value.prototype instanceof UfuncError))
    .map((Class) => [Class.name, Class]),
);

/**
 * Rebuilds an error a worker reported by class name and message.
 *
 * @returns an instance of the library's class of that name, or of the built-in one; anything else
 *   becomes a `KernelRuntimeError` that names what was thrown
 */
export function rebuildError(name: string, message: string): Error {
  const Class = UFUNC_ERRORS[name] ?? BUILT_IN_ERRORS[name];
  if (Class) return new Class(message);
  return new KernelRuntimeError(`The kernel threw a ${name} in a worker: ${message}`);
}
