/**
 * `drover ls`'s table: ID, NAME, STATE, WORKER, EXIT, DURATION, AGE.
 *
 * - STATE carries the outcome of an ended task where the state alone hides
 *   it: `failed (timed_out)`, `failed (lost)`, `failed (start_failed)`;
 *   `cancelled` and `succeeded` as they are.
 * - EXIT is the exit code, else the signal, except that a timed-out attempt
 *   says `timeout` (its SIGTERM came from Drover, not from the task).
 * - It fits `width` columns (80 unless the terminal or $COLUMNS says
 *   otherwise): full ids when the table fits with them (NAME and WORKER
 *   cut to at least MIN_NAME/MIN_WORKER); otherwise the ID column shows the shortest prefix, at least
 *   SHORT_ID characters, that tells the listed tasks apart (any such
 *   prefix works as an id: resolve-task-id.ts), up to MAX_SHORT_ID; ids
 *   that still share their first SHORT_ID characters (tasks of one batch,
 *   made in the same millisecond, differ only at the end) show those
 *   characters and `…` (typed, that prefix lists the matches). Then NAME and
 *   WORKER are cut with an ellipsis. `wide` shows full ids and cuts nothing;
 *   `--json` always has the full ids.
 */
import type { TaskSummary } from '../client/types.js';
import { stateStyle, type Style } from './colour.js';
import { formatAge, formatMs, formatTable, safeText } from './output.js';
import { DEFAULT_WIDTH } from './terminal-width.js';

export { DEFAULT_WIDTH };

export const SHORT_ID = 12;
export const MAX_SHORT_ID = 16;
const MIN_NAME = 8;
const MIN_WORKER = 6;

type Row = TaskSummary;

/** How the row's task (or its current attempt) ended, as the list API's `outcome` says; null while nothing ended. */
export function outcomeOf(t: Row): TaskSummary['outcome'] {
  return t.outcome;
}

export function stateCell(t: Row): string {
  const o = outcomeOf(t);
  if (t.state === 'failed' && o && o !== 'failed') return `failed (${o})`;
  return t.state;
}

export function exitCell(t: Row): string {
  if (t.endedAt === null) return '-';
  if (outcomeOf(t) === 'timed_out') return 'timeout';
  if (t.exitCode !== null) return String(t.exitCode);
  return t.signal ?? '-';
}

/** The shortest prefix length >= SHORT_ID at which all `ids` differ. */
export function shortIdLength(ids: readonly string[]): number {
  for (let n = SHORT_ID; n < 26; n++) if (new Set(ids.map((id) => id.slice(0, n))).size === new Set(ids).size) return n;
  return 26;
}

export function truncate(s: string, n: number): string {
  return s.length > n ? s.slice(0, Math.max(1, n - 1)) + '…' : s;
}

export interface TaskTableOptions {
  now?: number;
  /** Terminal width to fit; ignored with `wide`. */
  width?: number;
  wide?: boolean;
  colour?: boolean;
}

const HEADERS = ['ID', 'NAME', 'STATE', 'WORKER', 'EXIT', 'DURATION', 'AGE'] as const;

export function formatTaskTable(tasks: readonly Row[], opts: TaskTableOptions = {}): string {
  const width = opts.width ?? DEFAULT_WIDTH;
  if (opts.wide) return render(tasks, opts, (id) => id, null);
  const full = render(tasks, opts, (id) => id, width);
  if (full.split('\n').every((l) => l.length <= width)) return full;
  const ids = tasks.map((t) => t.id);
  const unique = shortIdLength(ids);
  const short = (id: string): string => {
    if (unique <= MAX_SHORT_ID) return id.slice(0, unique);
    const p = id.slice(0, SHORT_ID);
    return ids.some((o) => o !== id && o.startsWith(p)) ? `${p}…` : p;
  };
  return render(tasks, opts, short, width);
}

/** The table with ids shown by `showId`, fitted to `width` (null: nothing cut). */
function render(tasks: readonly Row[], opts: TaskTableOptions, showId: (id: string) => string, width: number | null): string {
  const now = opts.now ?? Date.now();
  // Made inert first (as formatTable would), so widths and cuts count what the terminal shows.
  const clean = (s: string) => safeText(s.replace(/[\r\n\t]+/g, ' '));
  const rows = tasks.map((t) => [showId(t.id), clean(t.name), stateCell(t), clean(t.workerId ?? '-'), exitCell(t), formatMs(t.durationMs), formatAge(t.createdAt, now)]);
  if (width !== null) fit(rows, width);
  const style = opts.colour ? (r: number, c: number): Style | null => (c === 2 ? stateStyle(tasks[r]!.state) : null) : undefined;
  return formatTable(HEADERS, rows, style);
}

/** Cuts NAME (column 1) and WORKER (column 3) until a line fits `width`. */
function fit(rows: string[][], width: number): void {
  const colWidth = (i: number) => Math.max(HEADERS[i]!.length, ...rows.map((r) => r[i]!.length));
  const total = () => HEADERS.reduce((sum, _, i) => sum + colWidth(i), 0) + 2 * (HEADERS.length - 1);
  const cut = (col: number, min: number) => {
    const over = total() - width;
    if (over <= 0) return;
    const to = Math.max(min, colWidth(col) - over);
    for (const r of rows) r[col] = truncate(r[col]!, to);
  };
  cut(1, Math.max(MIN_NAME, Math.floor(width / 5)));
  cut(3, MIN_WORKER);
  cut(1, MIN_NAME);
}
