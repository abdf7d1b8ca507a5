/**
 * Colour on a terminal. Decided once per stream, in this order:
 *
 *   1. `--no-color` (a root option)            -> none
 *   2. env NO_COLOR set, whatever its value    -> none (https://no-color.org)
 *   3. env FORCE_COLOR: "0" or "false" -> none; any other value -> colour
 *   4. the stream is a TTY                     -> colour; otherwise none
 *
 * Only SGR colour sequences of our own are ever written; task data is made
 * inert by safeText before it is coloured.
 */
import type { TaskState } from '../client/types.js';

export interface ColourInput {
  noColorFlag: boolean;
  env: Record<string, string | undefined>;
  isTTY: boolean;
}

export function colourEnabled(i: ColourInput): boolean {
  if (i.noColorFlag) return false;
  if (i.env.NO_COLOR !== undefined) return false;
  const force = i.env.FORCE_COLOR;
  if (force !== undefined) return !(force === '0' || force.toLowerCase() === 'false');
  return i.isTTY;
}

/** Set by the root program before a command runs (`--no-color`). */
export const colourFlags = { noColor: false };

/** Whether to colour what goes to stdout. */
export function stdoutColour(): boolean {
  return colourEnabled({ noColorFlag: colourFlags.noColor, env: process.env, isTTY: process.stdout.isTTY === true });
}

const SGR = { green: 32, red: 31, yellow: 33, blue: 34, magenta: 35, cyan: 36, dim: 2, bold: 1 } as const;
export type Style = keyof typeof SGR;

export function paint(s: string, style: Style | null): string {
  return style ? `\x1b[${SGR[style]}m${s}\x1b[0m` : s;
}

/** green succeeded, red failed, yellow running/retrying, cyan waiting, dim ready, magenta cancelled. */
export function stateStyle(state: TaskState | string): Style | null {
  switch (state) {
    case 'succeeded':
      return 'green';
    case 'failed':
      return 'red';
    case 'running':
    case 'retrying':
      return 'yellow';
    case 'waiting':
      return 'cyan';
    case 'ready':
      return 'dim';
    case 'cancelled':
      return 'magenta';
    case 'skipped':
      return 'dim';
    default:
      return null;
  }
}
