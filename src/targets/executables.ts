/**
 * The one cache of compiled kernels every target uses: executables by (scope, kernel spec, layout
 * key), compiled by the target's `KernelCompiler` on first use.
 *
 * A scope is what executables cannot outlive: the typed kernel for the cpu (one per signature; its
 * runners go when the ufunc does), a GPU device for the gpu (a released device's pipelines go with
 * it). Scopes are held weakly. A cache may be bounded: then the least recently used executable is
 * dropped, and `onEvict` told (the parallel target's workers must forget a dropped runner too).
 *
 * The cpu target's two engines keep theirs here too: JS runners (cpu/index.ts), and the Wasm
 * engine's kernels for the shared and the private memory and its verdict on a layout's vector loop
 * (cpu/wasm/engine.ts).
 */
import type { KernelCompiler, KernelToCompile } from './target.js';

export interface ExecutableCacheOptions<Executable> {
  /** Executables kept per scope at most. @default Infinity */
  readonly maxEntries?: number;
  /** Called with each executable dropped to stay within `maxEntries`. */
  readonly onEvict?: (executable: Executable) => void;
  /**
   * The scope is always the typed kernel (`spec.kernel`), so keys need not name the kernel: they
   * are then the layout key alone, a number where the layout key is one (numbers hash faster, and
   * the cpu looks its runner up on every call). @default false
   */
  readonly scopedByKernel?: boolean;
}

export class ExecutableCache<Layout, Executable, Context = undefined> {
  private readonly scopes = new WeakMap<object, Map<string | number, Executable>>();

  constructor(
    private readonly compiler: KernelCompiler<Layout, Executable, Context>,
    private readonly options: ExecutableCacheOptions<Executable> = {},
  ) {}

  /**
   * The executable of a kernel spec for a layout class, compiled on first use.
   *
   * @param spec - the kernel and what else its code depends on
   * @param layout - the call's layout class
   * @param scope - what the executable cannot outlive (see the module comment); a cache
   *   `scopedByKernel` must be given none @default the typed kernel
   * @param context - passed to `compile`
   * @returns the cached or newly compiled executable
   */
  get(spec: KernelToCompile, layout: Layout, scope: object = spec.kernel, context?: Context): Executable {
    let byKey = this.scopes.get(scope);
    if (!byKey) this.scopes.set(scope, (byKey = new Map()));
    const key = this.keyOf(spec, layout);
    let executable = byKey.get(key);
    if (executable !== undefined) {
      if (this.options.maxEntries !== undefined) {
        // Most recently used last: a Map keeps insertion order.
        byKey.delete(key);
        byKey.set(key, executable);
      }
      return executable;
    }
    executable = this.compiler.compile(spec, layout, context as Context);
    byKey.set(key, executable);
    if (byKey.size > (this.options.maxEntries ?? Infinity)) {
      const [oldestKey, oldest] = byKey.entries().next().value!;
      byKey.delete(oldestKey);
      this.options.onEvict?.(oldest);
    }
    return executable;
  }

  /** Forgets one executable (a compilation that failed, so the next call tries again). */
  delete(spec: KernelToCompile, layout: Layout, scope: object = spec.kernel): void {
    this.scopes.get(scope)?.delete(this.keyOf(spec, layout));
  }

  /** The key within a scope; with `scopedByKernel`, a numeric layout key gives bounds checking the lowest bit. */
  private keyOf(spec: KernelToCompile, layout: Layout): string | number {
    const layoutKey = this.compiler.layoutKey(layout);
    if (!this.options.scopedByKernel) return `${spec.kernelKey}#${layoutKey}#${spec.boundsCheck}`;
    if (typeof layoutKey === 'number' && layoutKey < 2 ** 51) return layoutKey * 2 + (spec.boundsCheck ? 1 : 0);
    return `${layoutKey}#${spec.boundsCheck}`;
  }
}
