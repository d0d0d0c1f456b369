// The part of istanbul-lib-instrument (which ships no types) that instrumented.test.ts uses.
declare module 'istanbul-lib-instrument' {
  export interface Instrumenter {
    instrumentSync(code: string, filename: string): string;
  }
  export function createInstrumenter(options?: { esModules?: boolean; compact?: boolean }): Instrumenter;
}
