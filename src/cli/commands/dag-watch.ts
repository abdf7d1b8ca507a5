/**
 * `drover dag run --wait` (and `dag retry --wait`): the lines printed as a
 * run's steps change, and the run's summary at its end. Pure: each call gets
 * the run as GET /v1/dag-runs/:id answered it and what was printed before.
 *
 * A line is printed when a step reaches running (again: a new attempt),
 * retrying, or an end (succeeded, failed, cancelled, skipped); pending and
 * released (`ready`, `waiting`) are not news. A step first seen ended after
 * one attempt (or after the one attempt a run retry gave it) also gets its
 * running line, dated by its start. Lines are ordered by when
 * the change happened (the step's own start and end times), and each starts
 * with that time relative to the run's start:
 *
 *   +0ms     extract  running (task 01JF8Z...)
 *   +1.2s    extract  succeeded in 1.15s
 *   +1.2s    load     skipped (upstream_failed)
 */
import type { DagRunDetail, DagRunStep } from '../../client/dag-types.js';
import { paint, stateStyle } from '../colour.js';
import { formatMs, safeText } from '../output.js';
import { runDurationMs, stepStateCell } from './dag-output.js';

/**
 * What was last printed of each step. `dag retry --wait` starts from the run
 * as it was before the retry (seenOf), so the steps it keeps are not news.
 */
export type Seen = Map<string, { state: string; attempts: number }>;

const NEWS = new Set(['running', 'retrying', 'succeeded', 'failed', 'cancelled', 'skipped']);
/** The ends of a step that ran. */
const ENDS = new Set(['succeeded', 'failed', 'cancelled']);

function describe(s: DagRunStep): string {
  switch (s.state) {
    case 'running':
      return `running (${s.attempts > 1 ? `attempt ${s.attempts}, ` : ''}task ${s.taskId})`;
    case 'retrying':
      return `retrying (attempt ${s.attempts} failed${s.result?.exitCode != null ? `: exit ${s.result.exitCode}` : ''})`;
    case 'succeeded':
      return `succeeded in ${formatMs(s.durationMs)}${s.attempts > 1 ? ` (${s.attempts} attempts)` : ''}`;
    case 'failed':
      return `${stepStateCell(s)} after ${s.attempts} attempt${s.attempts === 1 ? '' : 's'}`;
    default:
      return stepStateCell(s);
  }
}

export function seenOf(d: DagRunDetail): Seen {
  return new Map(d.steps.map((s) => [s.name, { state: s.state, attempts: s.attempts }]));
}

/** The lines for what changed since `seen` (updated in place); `now` dates a change whose step has no time for it. */
export function progressLines(d: DagRunDetail, seen: Seen, now: number, colour: boolean): string[] {
  const start = Date.parse(d.run.createdAt);
  const width = Math.max(...d.steps.map((s) => safeText(s.name).length));
  const news: Array<{ at: number; order: number; line: string }> = [];
  d.steps.forEach((s, order) => {
    const before = seen.get(s.name);
    if (before && before.state === s.state && before.attempts === s.attempts) return;
    seen.set(s.name, { state: s.state, attempts: s.attempts });
    if (!NEWS.has(s.state)) return;
    const line = (at: number, state: string, word: string) =>
      `${`+${formatMs(Math.max(0, at - start))}`.padEnd(8)} ${safeText(s.name).padEnd(width)}  ${colour ? paint(safeText(word), stateStyle(state)) : safeText(word)}`;
    // A step that started and ended between two reads (a 20 ms step): its start is printed too, from its
    // stored start time, so every step that ran shows both lines. The view's start time is that of the
    // first attempt since the step's latest release, so this is exact for a first attempt, and for the
    // attempt that follows an end (a run retry re-releases its failed steps: `dag retry --wait` saw the
    // step failed at attempt n, now it ended at n + 1). Not for a retry within one release (seen
    // `retrying`): its earlier attempt's start is all the view has.
    const fresh = s.attempts === 1 || (before !== undefined && ENDS.has(before.state) && s.attempts === before.attempts + 1);
    if (s.startedAt && fresh && ENDS.has(s.state) && before?.state !== 'running') {
      const attempt = s.attempts > 1 ? `attempt ${s.attempts}, ` : '';
      news.push({ at: Date.parse(s.startedAt), order, line: line(Date.parse(s.startedAt), 'running', `running (${attempt}task ${s.taskId})`) });
    }
    const at = s.state === 'running' && s.startedAt ? Date.parse(s.startedAt) : s.endedAt ? Date.parse(s.endedAt) : now;
    news.push({ at, order, line: line(at, s.state, describe(s)) });
  });
  return news.sort((a, b) => a.at - b.at || a.order - b.order).map((n) => n.line);
}

/** The last line: how the run ended and what its steps did. */
export function summaryLine(d: DagRunDetail, now: number): string {
  const counts = Object.entries(d.counts).map(([s, n]) => `${n} ${s}`).join(', ');
  return `run ${d.run.id} ${d.run.state} in ${formatMs(runDurationMs(d.run, now))}: ${counts}`;
}

/** For a run that did not succeed, the one stderr line naming the steps that failed (or were cancelled). */
export function failureLine(d: DagRunDetail): string {
  const bad = d.steps.filter((s) => s.state === 'failed' || s.state === 'cancelled').map((s) => `${s.name} ${stepStateCell(s)}`);
  return `DAG run ${d.run.id} ${d.run.state}${bad.length ? `: ${bad.join(', ')}` : ''}`;
}
