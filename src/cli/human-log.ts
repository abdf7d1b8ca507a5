/**
 * Log lines for a person at a terminal (`drover dev`, `drover worker
 * --log-format human`): `HH:MM:SS warn  message (key=value, ...)`, local time,
 * one line per record, never JSON or epoch milliseconds.
 *
 * Contract:
 * - Levels are pino's: a logger at `warn` writes warn, error and fatal; `info`
 *   adds info; `debug` adds debug; `silent` writes nothing. LOG_LEVELS is the
 *   one list the flags are validated against.
 * - Field values are flattened to text: errors by their message, arrays and
 *   objects as compact JSON, numbers named `...At` (epoch ms) as ISO times.
 *   Every value and the message pass through safeText, so a task's data cannot
 *   put control characters on the terminal.
 */
import { safeText } from './output.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const RANK: Record<LogLevel, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

export function isLogLevel(s: string): s is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(s);
}

/** Local wall-clock time of `ms` as HH:MM:SS (the terminal's own day; no date, no zone). */
export function clockTime(ms: number): string {
  const d = new Date(ms);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

function fieldText(key: string, v: unknown): string {
  if (v instanceof Error) return v.message;
  if (typeof v === 'number' && /At$/.test(key) && v > 1e11) return new Date(v).toISOString();
  if (typeof v === 'string') return v;
  if (v === undefined) return 'undefined';
  return JSON.stringify(v) ?? String(v);
}

/** One record as a line (no trailing newline). Pure: the time is passed in. */
export function formatLogLine(now: number, level: string, obj: object | string, msg?: string): string {
  const text = typeof obj === 'string' ? obj : (msg ?? '');
  const fields = typeof obj === 'string' ? [] : Object.entries(obj).map(([k, v]) => `${k}=${fieldText(k, v)}`);
  const tail = fields.length ? ` (${fields.join(', ')})` : '';
  return safeText(`${clockTime(now)} ${level.padEnd(5)} ${text}${tail}`.replace(/[\r\n\t]+/g, ' '));
}

export interface HumanLogger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

/** A Logger (worker/logger.ts) writing formatLogLine lines at `level` and above to `write`. */
export function humanLogger(level: LogLevel, write: (line: string) => void, now: () => number = Date.now): HumanLogger {
  const min = RANK[level];
  const at = (name: 'debug' | 'info' | 'warn' | 'error') =>
    RANK[name] >= min ? (obj: object | string, msg?: string) => write(formatLogLine(now(), name, obj, msg) + '\n') : () => {};
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
