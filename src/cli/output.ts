/**
 * Everything the CLI prints that has a format: tables, times, and the one-line
 * error. Contract for errors: exactly one line on stderr, `drover: <message>`,
 * and an exit status (2 for bad input, ours or the server's 400; 1 otherwise).
 */
import { ApiError, ConnectionError } from '../client/errors.js';
import { describeTokenSource, type Connection } from './credentials.js';
import { EXIT_FAILURE, EXIT_USAGE, UsageError } from './usage-error.js';

export const NOT_AUTHENTICATED = 'not authenticated: set DROVER_TOKEN or run drover dev in this directory';

/** Columns separated by two spaces; the last column is not padded. Cells are single-line. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const clean = (s: string) => s.replace(/[\r\n\t]+/g, ' ');
  const all = [headers.map(clean), ...rows.map((r) => r.map(clean))];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all
    .map((r) =>
      r
        .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n') + '\n';
}

/** "45s", "12m", "3h", "5d": how long ago `iso` was, relative to `now`. */
export function formatAge(iso: string | null | undefined, now: number = Date.now()): string {
  if (!iso) return '-';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '-';
  const s = Math.max(0, Math.floor((now - t) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** ISO time without milliseconds ("2026-11-30T12:00:00Z"), or "-". */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '-';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  return new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** "250ms", "1.5s", "5m", "1h30m", "2d3h": compact, without zero parts. */
export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '-';
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${+(ms / 1000).toFixed(2)}s`;
  const units: Array<[string, number]> = [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]];
  let rest = Math.round(ms / 1000) * 1000;
  const parts: string[] = [];
  for (const [u, size] of units) {
    const n = Math.floor(rest / size);
    rest -= n * size;
    if (n) parts.push(`${n}${u}`);
    if (parts.length === 2) break;
  }
  return parts.join('');
}

/** The EXIT column: the exit code, else the signal, else "-". */
export function formatExit(r: { exitCode: number | null; signal: string | null } | null | undefined): string {
  if (!r) return '-';
  if (r.exitCode !== null && r.exitCode !== undefined) return String(r.exitCode);
  if (r.signal) return r.signal;
  return '-';
}

export function formatLabels(labels: Record<string, string> | null | undefined): string {
  const entries = Object.entries(labels ?? {});
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(',') : '-';
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

/**
 * The message (without the `drover: ` prefix) and exit status for any error.
 * `conn` is the connection in use, if any, so a 401 can say where the token came from.
 */
export function describeError(err: unknown, conn: Connection | null = null): { message: string; exitCode: number } {
  if (err instanceof UsageError) return { message: err.message, exitCode: EXIT_USAGE };
  if (err instanceof ConnectionError) return { message: err.message, exitCode: EXIT_FAILURE };
  if (err instanceof ApiError) {
    switch (err.status) {
      case 400:
        if (err.field) return { message: `invalid ${err.field}: ${err.reason ?? err.message}`, exitCode: EXIT_USAGE };
        return { message: `invalid input: ${err.message}`, exitCode: EXIT_USAGE };
      case 401:
        if (!conn || !conn.token) return { message: NOT_AUTHENTICATED, exitCode: EXIT_FAILURE };
        return { message: `not authenticated: ${conn.url} rejected the token from ${describeTokenSource(conn)} (${err.message})`, exitCode: EXIT_FAILURE };
      case 403:
        return { message: `forbidden: ${err.message}`, exitCode: EXIT_FAILURE };
      case 409:
        return { message: `conflict: ${err.message}`, exitCode: EXIT_FAILURE };
      default:
        return { message: err.message, exitCode: EXIT_FAILURE };
    }
  }
  if (err instanceof Error) return { message: err.message, exitCode: EXIT_FAILURE };
  return { message: String(err), exitCode: EXIT_FAILURE };
}

/** Writes the single error line and returns the exit status to use. */
export function printError(err: unknown, conn: Connection | null = null): number {
  const { message, exitCode } = describeError(err, conn);
  process.stderr.write(`drover: ${oneLine(message)}\n`);
  if (process.env.DROVER_DEBUG && err instanceof Error && err.stack) process.stderr.write(err.stack + '\n');
  return exitCode;
}

export function oneLine(s: string): string {
  return s.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}
