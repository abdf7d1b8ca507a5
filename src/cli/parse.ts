/**
 * Validation of CLI flag values. Pure functions: each returns the parsed value
 * or throws UsageError with a message that names the flag, so bad input is
 * rejected before any request is made.
 */
import { parseDuration } from '../core/duration.js';
import { isTaskState, TASK_STATES, type TaskState } from '../core/task-state.js';
import { UsageError } from './usage-error.js';

/** `K=V` with a non-empty K; V may be empty and may contain `=`. */
export function parseKeyValue(flag: string, raw: string): [string, string] {
  const eq = raw.indexOf('=');
  if (eq < 0) throw new UsageError(`invalid ${flag} "${raw}": expected KEY=VALUE`);
  if (eq === 0) throw new UsageError(`invalid ${flag} "${raw}": the key before "=" is empty`);
  return [raw.slice(0, eq), raw.slice(eq + 1)];
}

/** Repeated `K=V` flags as an object; a repeated key keeps its last value. */
export function parseKeyValues(flag: string, raws: readonly string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of raws ?? []) {
    const [k, v] = parseKeyValue(flag, raw);
    out[k] = v;
  }
  return out;
}

/** A base-10 integer in [min, max]; rejects "1.5", "1e3", "0x10", "" and out-of-range values. */
export function parseIntFlag(flag: string, raw: string, min: number, max: number): number {
  const s = raw.trim();
  if (!/^[+-]?\d+$/.test(s)) throw new UsageError(`invalid ${flag} "${raw}": expected an integer ${min}..${max}`);
  const n = Number(s);
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`invalid ${flag} "${raw}": expected an integer ${min}..${max}`);
  return n;
}

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, kib: 1024, m: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gib: 1024 ** 3 };

/** A size in bytes: a whole number with an optional unit, B, KiB, MiB or GiB (K, M, G the same; any case), in [min, max]. */
export function parseSizeFlag(flag: string, raw: string, min: number, max: number): number {
  const m = /^(\d{1,15})\s*([A-Za-z]*)$/.exec(raw.trim());
  const unit = m ? SIZE_UNITS[m[2]!.toLowerCase()] : undefined;
  const n = m && unit !== undefined ? Number(m[1]) * unit : NaN;
  if (!Number.isSafeInteger(n)) throw new UsageError(`invalid ${flag} "${raw}": expected a size such as 100MiB, 512KiB or 1GiB (a bare number is bytes)`);
  if (n < min || n > max) throw new UsageError(`invalid ${flag} "${raw}": must be ${min}..${max} bytes`);
  return n;
}

/** A finite decimal number in [min, max]. */
export function parseNumberFlag(flag: string, raw: string, min: number, max: number): number {
  const s = raw.trim();
  const n = /^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(s) ? Number(s) : NaN;
  if (!Number.isFinite(n) || n < min || n > max) throw new UsageError(`invalid ${flag} "${raw}": expected a number ${min}..${max}`);
  return n;
}

/** On the CLI a bare number is seconds, as `sleep`, `timeout` and cron users read it (every duration flag's --help says so). The API keeps integer milliseconds. */
const BARE_SECONDS = /^\d+(\.\d+)?$/;

/**
 * A duration flag in milliseconds: a bare number is SECONDS ("5" = 5 s,
 * "1.5" = 1.5 s); with a unit as the API reads it ("500ms", "30s", "5m",
 * "1h30m", "2d"). Rounded to whole milliseconds.
 */
export function parseDurationFlag(flag: string, raw: string, maxMs = Number.MAX_SAFE_INTEGER): number {
  const s = raw.trim();
  const ms = BARE_SECONDS.test(s) ? Math.round(Number(s) * 1000) : parseDuration(s);
  if (ms === null || !Number.isFinite(ms)) throw new UsageError(`invalid ${flag} "${raw}": expected a duration such as 30 (seconds), 500ms, 30s, 5m or 1h30m`);
  if (ms > maxMs) throw new UsageError(`invalid ${flag} "${raw}": at most ${maxMs} ms`);
  return ms;
}

/**
 * A full task id (26 characters of Crockford base32, upper case). Inlined
 * rather than core/ids.js isTaskId: that module loads ulid and node:crypto,
 * which no read-only command needs at start-up. Commands resolve ids with
 * resolve-task-id.ts (prefixes, any case).
 */
const TASK_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

export function parseTaskId(raw: string): string {
  if (!TASK_ID.test(raw)) throw new UsageError(`invalid task id "${raw}": expected a 26-character ULID`);
  return raw;
}

export function parseTaskState(flag: string, raw: string): TaskState {
  if (!isTaskState(raw)) throw new UsageError(`invalid ${flag} "${raw}": expected one of ${TASK_STATES.join(', ')}`);
  return raw;
}

/** 0 means "any free port" (the server prints the one it got). */
export function parsePort(flag: string, raw: string): number {
  return parseIntFlag(flag, raw, 0, 65535);
}

/** `sqlite:PATH` or `postgres://...` / `postgresql://...`, returned unchanged. */
export function parseDbUrl(flag: string, raw: string): string {
  if (/^sqlite:.+/.test(raw)) return raw;
  if (/^postgres(ql)?:\/\/.+/.test(raw)) return raw;
  throw new UsageError(`invalid ${flag} "${raw}": expected sqlite:PATH or postgres://USER@HOST/DB`);
}

/** An absolute http(s) URL, without a trailing slash. */
export function parseHttpUrl(flag: string, raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new UsageError(`invalid ${flag} "${raw}": expected a URL such as http://127.0.0.1:7070`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError(`invalid ${flag} "${raw}": expected an http:// or https:// URL`);
  return raw.replace(/\/+$/, '');
}

/** Collector for repeatable commander options: `--env A=1 --env B=2` -> ['A=1', 'B=2']. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
