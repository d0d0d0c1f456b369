/**
 * The package's Node entry (`exports` condition `node`): worker_threads for the parallel target,
 * the `webgpu` package for the gpu target. The platform is installed before anything else runs.
 */
import './platform/node.js';

// Every public name, listed once in api.ts (both entries export exactly the same API).
export * from './api.js';
