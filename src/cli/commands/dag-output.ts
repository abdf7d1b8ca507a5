/**
 * What `drover dag ls|show|runs|status` print: field lists and tables that
 * fit the terminal (fit-table.ts; ids shortened to a unique prefix as
 * `drover ls` does, task-table.ts), states coloured (colour.ts), and every
 * piece of user data (names, commands, parameters, outputs) made inert with
 * safeText before it reaches the terminal.
 */
import type { Dag, DagRunDetail, DagRunListItem, DagRunStep, DagStep, DagSummary } from '../../client/dag-types.js';
import { paint, stateStyle, type Style } from '../colour.js';
import { cell, fitColumns } from '../fit-table.js';
import { formatMs, formatTable, formatTime, safeText, shellQuote } from '../output.js';
import { shortIdLength, MAX_SHORT_ID } from '../task-table.js';
import { describeSkipReason } from '../skip-reason.js';

export interface TableOptions {
  /** Columns to fit (the terminal's width). */
  width: number;
  colour: boolean;
  now: number;
}

/** Field lists: `key: value` with the keys aligned; values escaped; `state` coloured when asked. */
function fieldList(fields: ReadonlyArray<readonly [string, string]>, colour: boolean): string {
  const width = Math.max(...fields.map(([k]) => k.length));
  return fields.map(([k, v]) => `${(k + ':').padEnd(width + 1)} ${k === 'state' && colour ? paint(safeText(v), stateStyle(v)) : safeText(v)}`).join('\n') + '\n';
}

/**
 * Ids of a column as short as still tells them apart (at least SHORT_ID
 * characters), or null when that is not much shorter than the ids
 * (MAX_SHORT_ID): a run's step tasks are made in one millisecond and differ
 * only in their last characters, and a prefix that names none of them is no
 * use to `drover logs`.
 */
function idShortener(ids: readonly string[]): ((id: string) => string) | null {
  const n = shortIdLength(ids);
  return n <= MAX_SHORT_ID ? (id) => id.slice(0, n) : null;
}

/**
 * A table whose column `idCol` holds ids: full ids when every line fits,
 * otherwise ids shortened where they can be (idShortener); then the `cuts`
 * columns are cut, in order, to their minimums.
 */
function fittedTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  opts: { width: number; idCol: number | null; cuts: ReadonlyArray<{ col: number; min: number }>; style?: (row: number, col: number) => Style | null },
): string {
  const cells = rows.map((r) => r.map(cell));
  const fits = () => formatTable(headers, cells).split('\n').every((l) => l.length <= opts.width);
  if (opts.idCol !== null && !fits()) {
    const shorten = idShortener(rows.map((r) => r[opts.idCol!]!));
    if (shorten) for (const r of cells) r[opts.idCol] = shorten(r[opts.idCol]!);
  }
  fitColumns(headers, cells, opts.width, opts.cuts);
  return formatTable(headers, cells, opts.style);
}

/** What a step runs, in one line: its command as a shell would quote it, or its script's interpreter and first line. */
export function stepCommand(s: DagStep): string {
  const t = s.task;
  if (t.command !== null) return [t.command, ...t.args].map(shellQuote).join(' ');
  const first = (t.script ?? '').split('\n').find((l) => l.trim() !== '' && !l.startsWith('#!')) ?? '';
  const via = t.interpreter.length ? t.interpreter.join(' ') : (t.script ?? '').startsWith('#!') ? (t.script ?? '').split('\n')[0]!.slice(2).trim() : 'sh';
  return `script via ${via}: ${first.trim()}`;
}

export function formatDagTable(dags: readonly DagSummary[], opts: TableOptions): string {
  const headers = ['NAME', 'VERSION', 'STEPS', 'OWNER', 'UPDATED', 'DESCRIPTION'];
  const rows = dags.map((d) => [d.name, String(d.version), String(d.stepCount), d.owner, formatTime(d.updatedAt), d.description ?? '']);
  return fittedTable(headers, rows, { width: opts.width, idCol: null, cuts: [{ col: 5, min: 12 }, { col: 0, min: 12 }, { col: 3, min: 8 }] });
}

/** "2/5", with what did not succeed once the run has ended: "2/5 (1 failed, 2 skipped)". */
export function stepsCell(run: { stepCount: number; state: string }, counts: Partial<Record<string, number>>): string {
  const done = `${counts.succeeded ?? 0}/${run.stepCount}`;
  const other = (['failed', 'cancelled', 'skipped'] as const).filter((s) => counts[s]).map((s) => `${counts[s]} ${s}`);
  return other.length ? `${done} (${other.join(', ')})` : done;
}

/** A run's duration: to its end, or to now while it runs. */
export function runDurationMs(run: { createdAt: string; endedAt: string | null }, now: number): number {
  return Math.max(0, (run.endedAt ? Date.parse(run.endedAt) : now) - Date.parse(run.createdAt));
}

/** `drover dag runs`: RUN, STATE, STARTED, DURATION, STEPS (succeeded/total), VERSION; newest first as listed. */
export function formatRunTable(runs: readonly DagRunListItem[], opts: TableOptions): string {
  const headers = ['RUN', 'STATE', 'STARTED', 'DURATION', 'STEPS', 'VERSION'];
  const rows = runs.map((r) => [r.id, r.state, formatTime(r.createdAt), formatMs(runDurationMs(r, opts.now)), stepsCell(r, r.counts), String(r.version)]);
  const style = opts.colour ? (row: number, col: number): Style | null => (col === 1 ? stateStyle(runs[row]!.state) : null) : undefined;
  return fittedTable(headers, rows, { width: opts.width, idCol: 0, cuts: [{ col: 4, min: 5 }], ...(style ? { style } : {}) });
}

export function formatDagDetail(dag: Dag, runs: readonly DagRunListItem[], opts: TableOptions & { newest: number | null }): string {
  const params = dag.params === null ? 'any (the DAG declares none)' : Object.entries(dag.params).map(([k, v]) => `${k} (default ${JSON.stringify(v)})`).join(', ') || 'none';
  const fields: Array<[string, string]> = [
    ['name', dag.name],
    ['id', dag.id],
    ['owner', dag.owner],
    ['version', `${dag.version}${opts.newest !== null && opts.newest !== dag.version ? ` (the newest is ${opts.newest})` : ''}, applied ${formatTime(dag.createdAt)}`],
    ['first applied', formatTime(dag.firstCreatedAt)],
    ['description', dag.description ?? '-'],
    ['params', params],
    ['steps', String(dag.steps.length)],
  ];
  let out = fieldList(fields, false);
  out += '\nSTEPS\n';
  out += fittedTable(
    ['STEP', 'DEPENDS ON', 'WHEN', 'RETRIES', 'TIMEOUT', 'RUNS'],
    dag.steps.map((s) => [s.name, s.dependsOn.length ? s.dependsOn.join(',') : '-', s.when, String(s.task.retry.maxRetries), formatMs(s.task.timeoutMs), stepCommand(s)]),
    { width: opts.width, idCol: null, cuts: [{ col: 5, min: 16 }, { col: 1, min: 12 }, { col: 0, min: 10 }] },
  );
  out += '\nRECENT RUNS\n';
  out += runs.length ? formatRunTable(runs, opts) : '(none)\n';
  return out;
}

/** The STATE cell of a step: how it ended where the state alone hides it. */
export function stepStateCell(s: DagRunStep): string {
  if (s.state === 'skipped') return s.skipReason ? `skipped (${s.skipReason})` : 'skipped';
  if (s.state === 'failed' && s.result) {
    const r = s.result;
    if (r.outcome !== 'failed') return `failed (${r.outcome})`;
    if (r.exitCode !== null) return `failed (exit ${r.exitCode})`;
    if (r.signal) return `failed (${r.signal})`;
  }
  return s.state;
}

/** "+1.5s": how long after the run's start `iso` was. */
function offset(iso: string | null, runStart: number): string {
  return iso === null ? '-' : `+${formatMs(Math.max(0, Date.parse(iso) - runStart))}`;
}

export function formatRunStatus(d: DagRunDetail, opts: TableOptions & { criticalPath: boolean }): string {
  const r = d.run;
  const start = Date.parse(r.createdAt);
  const total = runDurationMs(r, opts.now);
  const counts = Object.entries(d.counts).map(([s, n]) => `${n} ${s}`).join(', ');
  const fields: Array<[string, string]> = [
    ['run', r.id],
    ['dag', `${r.dag} (version ${r.version})`],
    ['owner', r.owner],
    ['state', r.state],
  ];
  const params = Object.entries(r.params);
  if (params.length) fields.push(['params', params.map(([k, v]) => `${k}=${v}`).join(' ')]);
  if (r.scheduleId) fields.push(['schedule', `${r.scheduleId}${r.scheduledAt ? `, slot ${formatTime(r.scheduledAt)}` : ''}`]);
  fields.push(['started', formatTime(r.createdAt)], ['ended', formatTime(r.endedAt)], ['duration', `${formatMs(total)}${r.endedAt ? '' : ' so far'}`], ['steps', `${r.stepCount} (${counts || 'none left'})`]);
  let out = fieldList(fields, opts.colour);

  out += '\nSTEPS\n';
  const style = opts.colour ? (row: number, col: number): Style | null => (col === 1 ? stateStyle(d.steps[row]!.state) : null) : undefined;
  out += fittedTable(
    ['STEP', 'STATE', 'TASK', 'ATTEMPTS', 'START', 'DURATION'],
    d.steps.map((s) => [s.name, stepStateCell(s), s.taskId, String(s.attempts), offset(s.startedAt, start), formatMs(s.durationMs)]),
    { width: opts.width, idCol: 2, cuts: [{ col: 0, min: 8 }, { col: 1, min: 12 }, { col: 0, min: 4 }], ...(style ? { style } : {}) },
  );

  // Why each skipped step was skipped, in full (the STATE column may be cut to fit).
  const skipped = d.steps.filter((s) => s.state === 'skipped' && s.skipReason);
  if (skipped.length) {
    out += '\nSKIPPED\n';
    const w = Math.max(...skipped.map((s) => safeText(s.name).length));
    for (const s of skipped) out += `${safeText(s.name).padEnd(w)}  ${describeSkipReason(s.skipReason!)}\n`;
  }

  // Outputs in full, one KEY=VALUE a line under each step (like `drover show`): values are often longer than a column.
  const withOutputs = d.steps.filter((s) => s.outputs && Object.keys(s.outputs).length);
  if (withOutputs.length) {
    out += '\nOUTPUTS\n';
    const w = Math.max(...withOutputs.map((s) => safeText(s.name).length));
    for (const s of withOutputs) for (const [k, v] of Object.entries(s.outputs!)) out += `${safeText(s.name).padEnd(w)}  ${safeText(k)}=${safeText(v)}\n`;
  }
  if (opts.criticalPath) out += '\n' + formatCriticalPath(d, total);
  return out;
}

/**
 * The chain of steps that decided the run's duration (core/dag/critical-path.ts),
 * first to last, with each step's duration and its share of the run's: what
 * to make faster. The rest of the run's time is spent between them (waiting
 * for a slot, the scheduler, retry backoff before a first start).
 */
export function formatCriticalPath(d: DagRunDetail, totalMs: number): string {
  const head = `CRITICAL PATH (the run took ${formatMs(totalMs)}${d.run.endedAt ? '' : ' so far'})\n`;
  const steps = d.criticalPath.map((n) => d.steps.find((s) => s.name === n)).filter((s): s is DagRunStep => s !== undefined);
  if (steps.length === 0) return head + '(no step has started yet)\n';
  const pct = (ms: number) => (totalMs > 0 ? `${Math.round((100 * ms) / totalMs)}%` : '-');
  const table = formatTable(
    ['STEP', 'DURATION', 'SHARE', 'STATE'],
    steps.map((s) => [s.name, formatMs(s.durationMs), pct(s.durationMs ?? 0), stepStateCell(s)]),
  );
  const onPath = steps.reduce((sum, s) => sum + (s.durationMs ?? 0), 0);
  const between = Math.max(0, totalMs - onPath);
  return head + table + `(in the steps: ${formatMs(onPath)}, ${pct(onPath)}; before and between them: ${formatMs(between)}, ${pct(between)})\n`;
}
