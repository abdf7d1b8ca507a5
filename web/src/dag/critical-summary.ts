/**
 * What the run page says about the critical path (the chain of steps that
 * decided the run's duration: the server's `criticalPath`, first to last):
 * which step on it took longest, so a user knows which step to make faster,
 * and how long its steps waited for a worker slot, since more slots (not a
 * faster step) shorten that part. A run still going is described so far.
 */
import type { DagRunDetail, DagRunStep } from '../api/types';

export interface CriticalSummary {
  path: string[];
  /** The step on the path with the longest run time (its duration so far while running). */
  longest: { name: string; ms: number; running: boolean } | null;
  /** Time the path's steps spent released but not started (waiting for a slot). */
  waitedMs: number;
  /** From the run's start to its end (or now). */
  runMs: number;
  ended: boolean;
}

const ms = (iso: string | null) => (iso === null ? null : Date.parse(iso));

export function stepRunMs(s: DagRunStep, now: number): number | null {
  const start = ms(s.startedAt);
  if (start === null) return null;
  return s.durationMs ?? Math.max(0, (ms(s.endedAt) ?? now) - start);
}

export function criticalSummary(d: DagRunDetail, now: number): CriticalSummary {
  const byName = new Map(d.steps.map((s) => [s.name, s]));
  let longest: CriticalSummary['longest'] = null;
  let waitedMs = 0;
  for (const name of d.criticalPath) {
    const s = byName.get(name);
    if (!s) continue;
    const run = stepRunMs(s, now);
    if (run !== null && (longest === null || run > longest.ms)) longest = { name, ms: run, running: s.endedAt === null };
    const released = ms(s.releasedAt);
    const started = ms(s.startedAt);
    if (released !== null && started !== null) waitedMs += Math.max(0, started - released);
  }
  const start = Date.parse(d.run.createdAt);
  const end = ms(d.run.endedAt) ?? now;
  return { path: d.criticalPath, longest, waitedMs, runMs: Math.max(0, end - start), ended: d.run.endedAt !== null };
}

/** "a → b → c", or with more than `max` steps the first and last few around "… N more …". */
export function pathText(path: readonly string[], max = 8): string {
  if (path.length <= max) return path.join(' → ');
  const k = Math.floor((max - 1) / 2);
  return [...path.slice(0, k), `… ${path.length - 2 * k} more …`, ...path.slice(-k)].join(' → ');
}
