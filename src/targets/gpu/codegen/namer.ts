/**
 * The one place where generated WGSL gets its identifiers (as naga's `proc::Namer` with
 * `keywords/wgsl.rs`). Every name in a generated module — kernel variables, helper functions,
 * bindings, support functions — comes from one `WgslNamer`, so no two collide and none is a WGSL
 * keyword, a reserved word or a predeclared name.
 *
 * Why predeclared names too: WGSL lets a declaration shadow a built-in, so a kernel local called
 * `max` would compile — and then break the `max(a, b)` that the backend emits in the same scope.
 */

/** WGSL keywords (WGSL §15.2 "Keyword Summary"). */
const KEYWORDS = [
  'alias', 'break', 'case', 'const', 'const_assert', 'continue', 'continuing', 'default', 'diagnostic',
  'discard', 'else', 'enable', 'false', 'fn', 'for', 'if', 'let', 'loop', 'override', 'requires',
  'return', 'struct', 'switch', 'true', 'var', 'while',
];

/** WGSL reserved words (WGSL §15.3 "Reserved Words"), plus older keywords that Tint still rejects. */
const RESERVED_WORDS = [
  'NULL', 'Self', 'abstract', 'active', 'alignas', 'alignof', 'as', 'asm', 'asm_fragment', 'async',
  'attribute', 'auto', 'await', 'become', 'binding_array', 'bitcast', 'cast', 'catch', 'class',
  'co_await', 'co_return', 'co_yield', 'coherent', 'column_major', 'common', 'compile',
  'compile_fragment', 'concept', 'const_cast', 'consteval', 'constexpr', 'constinit', 'crate',
  'debugger', 'decltype', 'delete', 'demote', 'demote_to_helper', 'do', 'dynamic_cast', 'enum',
  'explicit', 'export', 'extends', 'extern', 'external', 'fallthrough', 'filter', 'final', 'finally',
  'friend', 'from', 'fxgroup', 'get', 'goto', 'groupshared', 'handle', 'highp', 'impl', 'implements',
  'import', 'inline', 'instanceof', 'interface', 'layout', 'lowp', 'macro', 'macro_rules', 'match',
  'mediump', 'meta', 'mod', 'module', 'move', 'mut', 'mutable', 'namespace', 'new', 'nil', 'noexcept',
  'noinline', 'nointerpolation', 'non_coherent', 'noncoherent', 'noperspective', 'null', 'nullptr',
  'of', 'operator', 'package', 'packoffset', 'partition', 'pass', 'patch', 'pixelfragment', 'precise',
  'precision', 'premerge', 'priv', 'protected', 'pub', 'public', 'readonly', 'ref', 'regardless',
  'register', 'reinterpret_cast', 'require', 'resource', 'restrict', 'self', 'set', 'shared', 'signed',
  'sizeof', 'smooth', 'snorm', 'static', 'static_assert', 'static_cast', 'std', 'subroutine', 'super',
  'target', 'template', 'this', 'thread_local', 'throw', 'trait', 'try', 'type', 'typedef', 'typeid',
  'typename', 'typeof', 'union', 'unless', 'unorm', 'unsafe', 'unsized', 'use', 'using', 'varying',
  'virtual', 'volatile', 'wgsl', 'where', 'with', 'write', 'writeonly', 'yield',
];

/**
 * Predeclared types, type generators, address spaces, access modes and built-in functions
 * (WGSL §6, §7, §17): legal identifiers, but shadowing them would break emitted code.
 */
const PREDECLARED = [
  'bool', 'f16', 'f32', 'i32', 'u32', 'i64', 'u64', 'vec2', 'vec3', 'vec4', 'vec2f', 'vec3f', 'vec4f',
  'vec2i', 'vec3i', 'vec4i', 'vec2u', 'vec3u', 'vec4u', 'mat2x2', 'mat2x3', 'mat2x4', 'mat3x2', 'mat3x3',
  'mat3x4', 'mat4x2', 'mat4x3', 'mat4x4', 'array', 'atomic', 'ptr', 'sampler', 'sampler_comparison',
  'function', 'private', 'workgroup', 'uniform', 'storage', 'read', 'read_write',
  'abs', 'acos', 'acosh', 'all', 'any', 'arrayLength', 'asin', 'asinh', 'atan', 'atan2', 'atanh',
  'atomicAdd', 'atomicAnd', 'atomicCompareExchangeWeak', 'atomicExchange', 'atomicLoad', 'atomicMax',
  'atomicMin', 'atomicOr', 'atomicStore', 'atomicSub', 'atomicXor', 'ceil', 'clamp', 'cos', 'cosh',
  'countLeadingZeros', 'countOneBits', 'countTrailingZeros', 'cross', 'degrees', 'determinant',
  'distance', 'dot', 'exp', 'exp2', 'extractBits', 'faceForward', 'firstLeadingBit', 'firstTrailingBit',
  'floor', 'fma', 'fract', 'frexp', 'insertBits', 'inverseSqrt', 'ldexp', 'length', 'log', 'log2', 'max',
  'min', 'mix', 'modf', 'normalize', 'pow', 'quantizeToF16', 'radians', 'reflect', 'refract',
  'reverseBits', 'round', 'saturate', 'select', 'sign', 'sin', 'sinh', 'smoothstep', 'sqrt', 'step',
  'storageBarrier', 'tan', 'tanh', 'transpose', 'trunc', 'workgroupBarrier', 'workgroupUniformLoad',
];

/**
 * The compute entry point of every generated module. Reserved like a keyword, so that a kernel
 * helper named `main` (or a local) gets another name instead of redeclaring it.
 */
export const ENTRY_POINT = 'main';

/** Every name a generated identifier must not be. */
export const WGSL_RESERVED: ReadonlySet<string> = new Set([...KEYWORDS, ...RESERVED_WORDS, ...PREDECLARED, ENTRY_POINT]);

/**
 * Hands out WGSL identifiers, unique within one module.
 *
 * @example
 * const namer = new WgslNamer();
 * namer.fresh('out');   // 'out'
 * namer.fresh('out');   // 'out_1'
 * namer.fresh('$loop'); // 'loop_1' — `$` is not valid in WGSL and `loop` is a keyword
 */
export class WgslNamer {
  private readonly taken = new Set<string>();

  /**
   * A new identifier that looks like `hint`.
   *
   * @param hint a JS identifier or a descriptive word; characters WGSL does not allow become `_`,
   *   leading underscores are dropped (WGSL forbids a leading `__` and a lone `_`)
   * @returns an identifier no earlier call returned, and not in {@link WGSL_RESERVED}
   */
  fresh(hint: string): string {
    let base = hint.replace(/[^A-Za-z0-9_]/g, '_').replace(/^_+/, '').replace(/_+$/, '');
    if (base === '') base = 'v';
    if (/^[0-9]/.test(base)) base = `v${base}`;
    let name = base;
    for (let n = 1; WGSL_RESERVED.has(name) || this.taken.has(name); n++) name = `${base}_${n}`;
    this.taken.add(name);
    return name;
  }
}
