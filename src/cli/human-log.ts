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

const LEVEL_NAMES: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };
/** Fields of a pino JSON line that the human line already shows or that say nothing to a person. */
const PINO_OWN = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'svc', 'v', 'reqId']);

/**
 * One pino JSON line as a human line (formatLogLine), or the line itself when
 * it is not pino JSON. Pino writes `err` as `{type, message, stack}`: shown by
 * its message.
 */
export function humanizePinoLine(line: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return safeText(line);
  }
  if (typeof o !== 'object' || o === null || typeof o.level !== 'number') return safeText(line);
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (PINO_OWN.has(k)) continue;
    fields[k] = v && typeof v === 'object' && typeof (v as { message?: unknown }).message === 'string' ? (v as { message: string }).message : v;
  }
  return formatLogLine(typeof o.time === 'number' ? o.time : Date.now(), LEVEL_NAMES[o.level] ?? String(o.level), fields, typeof o.msg === 'string' ? o.msg : '');
}

/**
 * A pino destination (an object with write(chunk)) that turns its JSON lines
 * into human lines (without the newline) for `write`: what `drover dev` gives the in-process server,
 * so its warnings read like the workers'. A chunk may hold several lines.
 */
export function humanPinoDestination(write: (line: string) => void): { write(chunk: string): boolean } {
  return {
    write(chunk: string): boolean {
      for (const line of chunk.split('\n')) if (line.trim()) write(humanizePinoLine(line));
      return true;
    },
  };
}
