/**
 * Everything the CLI prints that has a format: tables, times, and the one-line
 * error. Contract for errors: exactly one line on stderr, `drover: <message>`,
 * and an exit status (2 for bad input, ours or the server's 400; 1 otherwise).
 *
 * Task, user and worker data (names, commands, labels, errors, hostnames) is
 * whatever someone submitted: every piece of it passes through `safeText`
 * before it reaches a terminal, so an escape sequence in a task name cannot
 * move the cursor, retitle the window or hide lines. JSON output (--json) is
 * left to JSON.stringify, which escapes C0 controls. `drover logs` is the
 * task's own output: see stripControls (terminal) and raw bytes (pipe).
 */
import { ApiError, ConnectionError } from '../client/errors.js';
import { describeTokenSource, describeUrlSource, type Connection } from './credentials.js';
import { paint, type Style } from './colour.js';
import { EXIT_FAILURE, EXIT_USAGE, UsageError } from './usage-error.js';

/** How to get credentials, for the messages that say none were found. */
export const HOW_TO_CONNECT = 'run `drover login URL` (stores a token for any directory), start a local server with `drover dev`, or set DROVER_URL and DROVER_TOKEN';

export const NOT_AUTHENTICATED = `not authenticated: no token found (--token, DROVER_TOKEN, .drover/credentials.json, ~/.config/drover/credentials.json): ${HOW_TO_CONNECT}`;

/**
 * C0 controls (newline and tab included), DEL, C1 controls (U+0080-U+009F,
 * which some terminals act on like ESC sequences) and the bidirectional
 * overrides and isolates (which reorder what is shown: "Trojan Source").
 */
const UNSAFE_CHARS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const NAMED_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * Text from task/user/worker data, made inert for a terminal: each unsafe
 * character (UNSAFE_CHARS) becomes a visible escape (`\x1b`, `\n`, `\u202e`),
 * so ESC [2J prints as `\x1b[2J` instead of clearing the screen. Everything
 * else, including non-ASCII text, is kept. The one sanitizer of the CLI.
 */
export function safeText(s: string): string {
  return s.replace(UNSAFE_CHARS, (ch) => {
    const named = NAMED_ESCAPES[ch];
    if (named) return named;
    const code = ch.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/**
 * Columns separated by two spaces; the last column is not padded. Cells are
 * single-line: runs of newlines and tabs become one space, other unsafe
 * characters are escaped (safeText). `style` colours a body cell (row index
 * from 0, header excluded) after its width was measured, so colour never
 * shifts a column.
 */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[], style?: (row: number, col: number) => Style | null): string {
  const clean = (s: string) => safeText(s.replace(/[\r\n\t]+/g, ' '));
  const all = [headers.map(clean), ...rows.map((r) => r.map(clean))];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all
    .map((r, ri) =>
      r
        .map((cell, i) => {
          const pad = i === r.length - 1 ? '' : ' '.repeat(Math.max(0, (widths[i] ?? 0) - cell.length));
          const st = ri > 0 && style ? style(ri - 1, i) : null;
          return (st && cell ? paint(cell, st) : cell) + pad;
        })
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

/** A word as a shell would need it written to mean itself: bare when it is safe, else single-quoted. */
export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_\-+=.,/:@%]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
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
  if (err instanceof ConnectionError) {
    if (!conn) return { message: err.message, exitCode: EXIT_FAILURE };
    const hint = conn.anyCredentials ? '' : `; no credentials found: ${HOW_TO_CONNECT}`;
    return { message: `cannot reach Drover at ${err.url} (url from ${describeUrlSource(conn)}): ${err.detail}${hint}`, exitCode: EXIT_FAILURE };
  }
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
  // Server messages quote what was sent (field names, ids): escape them too.
  process.stderr.write(`drover: ${safeText(oneLine(message))}\n`);
  if (process.env.DROVER_DEBUG && err instanceof Error && err.stack) process.stderr.write(err.stack + '\n');
  return exitCode;
}

export function oneLine(s: string): string {
  return s.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

/** Filters a byte stream chunk by chunk; `end()` returns what a sequence cut by the end of the stream held back. */
export interface ByteFilter {
  write(chunk: Uint8Array): Uint8Array;
  end(): Uint8Array;
}

/**
 * Longest OSC/DCS/SOS/PM/APC string dropped while waiting for its terminator;
 * beyond it (or at a newline) the filter gives up on it and shows text again,
 * so one stray ESC ] cannot swallow the rest of a log.
 */
const MAX_CONTROL_STRING = 4096;

const enum S {
  Ground,
  /** After ESC. */
  Esc,
  /** ESC, intermediates (0x20-0x2F), waiting for the final byte. */
  EscInter,
  /** Control sequence (ESC [ or C1 CSI): parameters and intermediates until a final byte 0x40-0x7E. */
  Csi,
  /** A control string (OSC, DCS, SOS, PM, APC) until BEL or ST. */
  Str,
  /** In a control string, after ESC (ESC \ is ST). */
  StrEsc,
  /** In a control string, after 0xC2 (C2 9C is the C1 ST). */
  StrC2,
  /** After 0xC2 in text: a C1 control (C2 80..C2 9F) or the start of another character. */
  C2,
}

/**
 * `drover logs` (and `submit --wait`) writing to a terminal: a task's output
 * with ESC sequences (CSI, OSC, DCS, ..., 7-bit and UTF-8-encoded C1 forms)
 * removed, and every other control except \n and \t dropped (\r, BEL, \b,
 * DEL). Text, including any UTF-8, passes unchanged. Stateful: a sequence cut
 * across chunks is still removed. (Piped, the CLI writes the raw bytes.)
 */
export function controlStripper(): ByteFilter {
  let state = S.Ground;
  let strLen = 0;
  return {
    write(chunk) {
      const out = Buffer.allocUnsafe(chunk.length + 1);
      let n = 0;
      for (let i = 0; i < chunk.length; i++) {
        const b = chunk[i]!;
        switch (state) {
          case S.Ground:
            if (b === 0x1b) state = S.Esc;
            else if (b === 0xc2) state = S.C2;
            else if (b === 0x0a || b === 0x09 || (b >= 0x20 && b !== 0x7f)) out[n++] = b;
            continue;
          case S.C2:
            if (b >= 0x80 && b <= 0x9f) {
              // C1 control: CSI, the string openers, or one to drop.
              state = b === 0x9b ? S.Csi : b === 0x90 || b === 0x98 || b === 0x9d || b === 0x9e || b === 0x9f ? S.Str : S.Ground;
              strLen = 0;
              continue;
            }
            out[n++] = 0xc2;
            state = S.Ground;
            i--; // this byte again, as text
            continue;
          case S.Esc:
            if (b === 0x5b) state = S.Csi;
            else if (b === 0x5d || b === 0x50 || b === 0x58 || b === 0x5e || b === 0x5f) {
              state = S.Str;
              strLen = 0;
            } else if (b >= 0x20 && b <= 0x2f) state = S.EscInter;
            else if (b >= 0x30 && b <= 0x7e) state = S.Ground;
            else if (b !== 0x1b) {
              state = S.Ground;
              i--;
            }
            continue;
          case S.EscInter:
            if (b >= 0x20 && b <= 0x2f) continue;
            state = S.Ground;
            if (!(b >= 0x30 && b <= 0x7e)) i--;
            continue;
          case S.Csi:
            if (b >= 0x20 && b <= 0x3f) continue;
            state = S.Ground;
            if (!(b >= 0x40 && b <= 0x7e)) i--; // not a sequence after all: this byte as text
            continue;
          case S.Str:
          case S.StrEsc:
          case S.StrC2:
            if (state === S.StrEsc && b === 0x5c) {
              state = S.Ground;
              continue;
            }
            if (state === S.StrC2 && b === 0x9c) {
              state = S.Ground;
              continue;
            }
            if (state === S.StrEsc) {
              // ESC inside a string ends it and starts a new sequence.
              state = S.Esc;
              i--;
              continue;
            }
            if (b === 0x07) state = S.Ground;
            else if (b === 0x0a || ++strLen > MAX_CONTROL_STRING) {
              state = S.Ground;
              if (b === 0x0a) out[n++] = b;
            } else state = b === 0x1b ? S.StrEsc : b === 0xc2 ? S.StrC2 : S.Str;
            continue;
        }
      }
      return out.subarray(0, n);
    },
    end() {
      // Only a lone 0xC2 at the very end was text held back; a cut sequence stays dropped.
      const held = state === S.C2 ? Buffer.from([0xc2]) : Buffer.alloc(0);
      state = S.Ground;
      return held;
    },
  };
}
