/**
 * The WebAssembly engine of the cpu and parallel targets (see engine.ts).
 */
export { chooseEngine, explainPlan, surelyJs, runWasm, engineMode, setEngineMode, type EngineMode, type EngineChoice } from './engine.js';
export { allocateInWasmMemory, isInWasmMemory } from './memory.js';
