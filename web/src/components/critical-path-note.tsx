/**
 * The sentence under a run's timeline that says which step to make faster:
 * the longest step on the critical path (dag/critical-summary.ts), its share
 * of the run, and, when the path's steps waited long for a worker slot, that
 * more slots would help too. Names are text (never HTML).
 */
import type { DagRunDetail } from '../api/types';
import { criticalSummary, pathText } from '../dag/critical-summary';
import { formatDuration } from '../format/duration';
import { useNow } from '../hooks/use-now';

export function CriticalPathNote({ detail }: { detail: DagRunDetail }) {
  const now = useNow(detail.run.state === 'running' ? 1000 : 60_000);
  const c = criticalSummary(detail, now);
  if (c.path.length === 0 || c.longest === null) {
    return (
      <p className="critical-note" data-testid="critical-note">
        No step has run yet, so there is no critical path.
      </p>
    );
  }
  const share = c.runMs > 0 ? Math.round((c.longest.ms / c.runMs) * 100) : 0;
  const runWords = c.ended ? `The run took ${formatDuration(c.runMs)}` : `The run has taken ${formatDuration(c.runMs)} so far`;
  return (
    <div className="critical-note" data-testid="critical-note">
      <p>
        <span className="critical-mark" aria-hidden="true">
          ◆{' '}
        </span>
        Critical path ({c.path.length} step{c.path.length === 1 ? '' : 's'}): <span data-testid="critical-path">{pathText(c.path)}</span>.{' '}
        {c.path.length === 1
          ? 'No other step held it up: it decided how long the run took.'
          : 'Each of these waited for the one before it, so together they decided how long the run took.'}
      </p>
      {detail.run.state === 'cancelled' ? (
        <p>{runWords} before it was cancelled.</p>
      ) : (
        <p>
          {runWords}; the longest step on the path is <strong data-testid="critical-longest">{c.longest.name}</strong> ({formatDuration(c.longest.ms)}
          {c.longest.running ? ' so far' : ''}, {share} % of the run). Make <strong>{c.longest.name}</strong> faster to shorten the run.
          {c.waitedMs >= Math.max(1000, c.runMs * 0.2) && (
            <> Steps on the path also waited {formatDuration(c.waitedMs)} for a free worker slot: more worker slots would shorten it too.</>
          )}
        </p>
      )}
    </div>
  );
}
