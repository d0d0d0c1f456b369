/**
 * The entry of the gpu target's worker thread per GPU (targets/gpu/runtime/device-worker.ts,
 * started by targets/parallel/spawn-node.ts): the Node platform first, as every thread of the
 * library needs one, then the worker's service on its port.
 */
import './node.js';
import { parentPort } from 'node:worker_threads';
import { serveDeviceWorker } from '../targets/gpu/runtime/device-worker.js';

serveDeviceWorker(parentPort!);
