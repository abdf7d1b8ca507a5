/**
 * A task or attempt state: a coloured pill with the state's name in text and
 * a shape (dot, ring, check, cross) that differs per group, so colour is
 * never the only cue. Colours per theme in styles/badges.css.
 */
const LABELS: Record<string, string> = {
  ready: 'ready',
  waiting: 'waiting',
  running: 'running',
  retrying: 'retrying',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
  skipped: 'skipped',
  timed_out: 'timed out',
  lost: 'lost',
  connected: 'connected',
  draining: 'draining',
  disconnected: 'disconnected',
};

export function StateBadge({ state }: { state: string }) {
  const known = Object.hasOwn(LABELS, state);
  return (
    <span className={`badge badge-${known ? state : 'unknown'}`} data-state={state}>
      <span className="badge-icon" aria-hidden="true" />
      {known ? LABELS[state] : state}
    </span>
  );
}
