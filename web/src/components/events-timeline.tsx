/** The task's state transitions, oldest first: when, from → to, why and who. */
import type { TaskEvent } from '../api/types';
import { StateBadge } from './state-badge';
import { TimeText } from './time-text';

const REASONS: Record<string, string> = {
  submitted: 'submitted',
  released: 'released',
  claimed: 'claimed by a worker',
  attempt_succeeded: 'attempt succeeded',
  attempt_failed: 'attempt failed',
  attempt_timed_out: 'attempt timed out',
  retries_exhausted: 'no retries left',
  backoff_elapsed: 'backoff elapsed',
  worker_lost: 'worker lost',
  returned: 'given back unstarted',
  lost_cap_exceeded: 'lost too often',
  cancel_requested: 'cancel requested',
  manual_retry: 'retried by hand',
  start_failed: 'could not start',
};

export function EventsTimeline({ events }: { events: TaskEvent[] }) {
  if (events.length === 0) return <p className="muted">No events.</p>;
  return (
    <ol className="timeline">
      {events.map((e) => (
        <li key={e.id} className="timeline-item">
          <span className="timeline-dot" aria-hidden="true" />
          <div className="timeline-body">
            <div className="timeline-head">
              <TimeText iso={e.at} />
              <span className="timeline-states">
                {e.from ? <StateBadge state={e.from} /> : <span className="muted">new</span>}
                <span aria-label="to">→</span>
                <StateBadge state={e.to} />
              </span>
            </div>
            <div className="timeline-meta">
              {Object.hasOwn(REASONS, e.reason) ? REASONS[e.reason] : e.reason} · by <span className="actor">{e.actor}</span>
              {e.detail && Object.keys(e.detail).length > 0 && <EventDetail detail={e.detail} />}
            </div>
          </div>
        </li>
      ))}
    </ol>
  );
}

function EventDetail({ detail }: { detail: Record<string, unknown> }) {
  return (
    <span className="timeline-detail">
      {Object.entries(detail)
        .filter(([, v]) => v !== null && v !== undefined && v !== '')
        .map(([k, v]) => (
          <span key={k} className="detail-pair">
            {k}: {typeof v === 'string' ? v : JSON.stringify(v)}
          </span>
        ))}
    </span>
  );
}
