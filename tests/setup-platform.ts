// Tests import internal modules directly, not only the package entry: install the Node platform
// first, as the entry (src/index.ts) does.
import '../src/platform/node.js';
