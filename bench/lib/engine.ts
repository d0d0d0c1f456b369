/**
 * The engine a ufunc call runs on, in a few words, from its `explain(…)` sentence: "Wasm SIMD×4",
 * "Wasm SIMD×4 rows", "Wasm SIMD×4 along the row", "Wasm scalar", "JS" (", table of 256" where a function of one byte is looked up); on the parallel target prefixed by where ("workers", "calling thread").
 */
export function engineLabel(explained: string): string {
  const where = explained.startsWith('On the calling thread') ? 'calling thread, ' : explained.startsWith('On ') ? 'workers, ' : '';
  const simd = /WebAssembly \(SIMD, (\d+) lanes(?: × (\d+) vectors)?/.exec(explained);
  // a function of one byte: large calls look each element up in a table of its 256 results
  const table = /looks each element up/.test(explained) ? ', table of 256' : '';
  if (simd) return `${where}Wasm SIMD×${simd[1]}${simd[2] ? `, ${simd[2]} vectors` : ''}${table}`;
  const rows = /WebAssembly \(SIMD, (\d+) rows per vector.*?(?: × (\d+) vectors of rows|;)/.exec(explained);
  if (rows) return `${where}Wasm SIMD×${rows[1]} rows${rows[2] ? ` ×${rows[2]}` : ''}`;
  // rows one after another, a loop along the row in lanes (along-rows.ts)
  const along = /WebAssembly \(rows one after another, the loop at line \d+ in SIMD along the row, (\d+) elements per vector/.exec(explained);
  if (along) return `${where}Wasm SIMD×${along[1]} along the row`;
  if (/WebAssembly \(scalar/.test(explained)) return `${where}Wasm scalar`;
  if (/JavaScript/.test(explained)) return `${where}JS`;
  return explained.slice(0, 40);
}
