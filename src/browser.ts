/**
 * The package's browser entry (`exports` condition `browser`): module Web Workers over
 * SharedArrayBuffer for the parallel target (in cross-origin isolated pages), `navigator.gpu` for
 * the gpu target. Nothing here or below imports a `node:` module or the `webgpu` package.
 */
import './platform/browser.js';

// Every public name, listed once in api.ts (both entries export exactly the same API).
export * from './api.js';
