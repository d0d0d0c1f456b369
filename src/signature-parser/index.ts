export { parseSignature, resolveTypeName, formatArgType } from './types.js';
export type { ArgType, Signature } from './types.js';
export { parseLayout, formatCoreDims } from './layout.js';
export type { CoreDim, Layout } from './layout.js';
