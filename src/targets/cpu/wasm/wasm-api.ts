/**
 * The parts of the `WebAssembly` global this engine uses. The project compiles without the DOM
 * library, and @types/node does not declare `WebAssembly`; declaring it globally here would clash
 * with the DOM's declarations in programs that use both, so the global is typed locally.
 */

export interface WasmMemory {
  readonly buffer: ArrayBuffer | SharedArrayBuffer;
  grow(pages: number): number;
}

export interface WasmInstance {
  readonly exports: Record<string, unknown>;
}

export interface WasmModule {
  readonly __brand?: 'WebAssembly.Module';
}

interface WebAssemblyApi {
  Memory: new (descriptor: { initial: number; maximum?: number; shared?: boolean }) => WasmMemory;
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: Record<string, Record<string, unknown>>) => WasmInstance;
  validate(bytes: Uint8Array): boolean;
}

export const WebAssemblyApi = (globalThis as unknown as { WebAssembly: WebAssemblyApi }).WebAssembly;
