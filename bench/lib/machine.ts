/**
 * What machine a benchmark ran on, for the top of every report and for the results' file names.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';

import { formatBytes } from './format.js';
import { hugePageNote } from './huge-pages.js';

export interface Machine {
  /** From /proc/cpuinfo's `model name` (os.cpus() elsewhere). */
  readonly cpuModel: string;
  /** Logical cores Node may use (`os.availableParallelism()`). */
  readonly cores: number;
  readonly memoryBytes: number;
  readonly os: string;
  readonly node: string;
  /** The WebGPU adapter as the library describes it, or why there is none. */
  readonly gpu: string;
  /** A short name of the GPU for file names, when the adapter is real hardware. */
  readonly gpuName?: string;
  /**
   * The 1-minute load average when the run started: above zero, something else was using the
   * cores (another build, another benchmark) and the numbers are worth less.
   */
  readonly loadAverage: number;
  /** Whether fresh typed arrays get huge pages (huge-pages.ts): what a fresh output's first writes cost. */
  readonly memoryPages?: string;
}

function cpuModel(): string {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('model name'));
    if (line) return line.slice(line.indexOf(':') + 1).trim();
  } catch {
    // not Linux: os.cpus() below
  }
  return os.cpus()[0]?.model.trim() ?? 'unknown CPU';
}

/**
 * @param gpu the adapter line from the library (`describeAdapter()`), and the GPU's short name
 *   when it is real hardware (not a software rasteriser such as lavapipe)
 * @returns the machine's description
 * @example
 * const machine = describeMachine({ summary: await describeAdapter() });
 */
export function describeMachine(gpu: { summary: string; hardwareName?: string }): Machine {
  return {
    cpuModel: cpuModel(),
    cores: os.availableParallelism(),
    memoryBytes: os.totalmem(),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    loadAverage: os.loadavg()[0],
    memoryPages: hugePageNote(),
    gpu: gpu.summary,
    ...(gpu.hardwareName ? { gpuName: gpu.hardwareName } : {}),
  };
}

function slugOf(text: string): string {
  return text
    .toLowerCase()
    .replace(/\((r|tm)\)/g, '')
    .replace(/\b(processor|cpu|\d+-core)\b/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

/**
 * A file name for this machine's results that is the same on every run on the same kind of machine:
 * CPU model, core count and, when there is one, the hardware GPU. E.g. `amd-epyc-2c`,
 * `intel-xeon-platinum-8480-16c-nvidia-h100-80gb-hbm3`.
 */
export function machineSlug(machine: Machine): string {
  const parts = [slugOf(machine.cpuModel), `${machine.cores}c`];
  if (machine.gpuName) parts.push(slugOf(machine.gpuName));
  return parts.join('-');
}

/** The machine as a Markdown bullet list. */
export function machineMarkdown(machine: Machine): string {
  return [
    `- CPU: ${machine.cpuModel}, ${machine.cores} logical cores`,
    `- memory: ${formatBytes(machine.memoryBytes)}`,
    `- OS: ${machine.os}; Node ${machine.node}`,
    `- load average (1 min) when the run started: ${machine.loadAverage.toFixed(2)}${machine.loadAverage > 0.5 * machine.cores ? ' (busy: other work shared the cores, so times are inflated and noisy)' : ''}`,
    `- GPU (WebGPU adapter): ${machine.gpu}`,
    ...(machine.memoryPages ? [`- memory pages: ${machine.memoryPages}`] : []),
  ].join('\n');
}
