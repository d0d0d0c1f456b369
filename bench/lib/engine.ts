/**
 * The engine a ufunc call runs on, in a few words, from its `explain(…)` sentence: "Wasm SIMD×4",
 * "Wasm scalar", "JS" (", table of 256" where a function of one byte is looked up); on the parallel target prefixed by where ("workers", "calling thread").
 */
export function engineLabel(explained: string): string {
  const where = explained.startsWith('On the calling thread') ? 'calling thread, ' : explained.startsWith('On ') ? 'workers, ' : '';
  const simd = /WebAssembly \(SIMD, (\d+) lanes(?: × (\d+) vectors)?/.exec(explained);
  // a function of one byte: large calls look each element up in a table of its 256 results
  const table = /looks each element up/.test(explained) ? ', table of 256' : '';
  if (simd) return `${where}Wasm SIMD×${simd[1]}${simd[2] ? `, ${simd[2]} vectors` : ''}${table}`;
  const rows = /WebAssembly \(SIMD, (\d+) rows per vector.*?(?: × (\d+) vectors of rows|;)/.exec(explained);
  if (rows) return `${where}Wasm SIMD×${rows[1]} rows${rows[2] ? ` ×${rows[2]}` : ''}`;
  if (/WebAssembly \(scalar/.test(explained)) return `${where}Wasm scalar`;
  if (/JavaScript/.test(explained)) return `${where}JS`;
  return explained.slice(0, 40);
}
