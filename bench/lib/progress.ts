/**
 * One progress line on stderr, so that stdout stays clean for results. On a terminal the line is
 * redrawn in place (`[ 3/42 0:17] saxpy · parallel · sample 4/7`); when stderr is a file or a
 * pipe, only each new step is written, as its own line, so logs stay short.
 */

const interactive = process.stderr.isTTY === true;
const startedAt = process.hrtime.bigint();

let totalSteps = 0;
let stepsBegun = 0;
let currentStep = '';
let drawn = false;

function elapsed(): string {
  const seconds = Math.floor(Number(process.hrtime.bigint() - startedAt) / 1e9);
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
}

function prefix(): string {
  const width = String(totalSteps).length;
  const count = totalSteps > 0 ? `${String(stepsBegun).padStart(width)}/${totalSteps} ` : '';
  return `[${count}${elapsed()}]`;
}

function draw(text: string): void {
  // Cut to the terminal's width: a wrapped line cannot be erased with \r.
  const line = text.slice(0, Math.max(20, (process.stderr.columns ?? 100) - 1));
  process.stderr.write(`\r\x1b[2K${line}`);
  drawn = true;
}

/** Sets how many steps the run will take, for the `[n/total]` counter; 0 hides the counter. */
export function setTotalSteps(total: number): void {
  totalSteps = total;
  stepsBegun = 0;
}

/** Starts the next step: counts it and shows its name. */
export function beginStep(name: string): void {
  stepsBegun++;
  currentStep = name;
  if (interactive) draw(`${prefix()} ${name}`);
  else process.stderr.write(`${prefix()} ${name}\n`);
}

/** Shows what the current step is doing now (terminal only). */
export function showDetail(detail: string): void {
  if (interactive) draw(`${prefix()} ${currentStep} · ${detail}`);
}

/** Writes a line of its own on stderr (a warning, a skipped peer) without breaking the progress line. */
export function note(line: string): void {
  if (drawn) process.stderr.write('\r\x1b[2K');
  process.stderr.write(`${line}\n`);
  if (interactive && currentStep) draw(`${prefix()} ${currentStep}`);
}

/** Erases the progress line; call before printing results on stdout. */
export function clearProgress(): void {
  if (drawn) process.stderr.write('\r\x1b[2K');
  drawn = false;
  currentStep = '';
}
