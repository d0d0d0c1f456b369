/**
 * The parallel target's worker for the example page: the library's Web Worker, bundled beside
 * main.js as worker.js (what an app does with the package's 'ufunc/worker' entry).
 *
 * Opened as `worker.js?waitAsync=0` (the page does so when it is itself opened with
 * `?waitAsync=0`), it first removes `Atomics.waitAsync`, so the page behaves as in a browser
 * without it and the worker's polling fallback runs (tests/browser checks its results).
 */
const search = (globalThis as unknown as { location: { search: string } }).location.search;
if (new URLSearchParams(search).get('waitAsync') === '0') delete (Atomics as { waitAsync?: unknown }).waitAsync;
// After the line above: the worker reads Atomics.waitAsync when its module is evaluated. The
// import resolves within this task, before any message reaches the worker.
await import('../../src/targets/parallel/web/worker.js');
