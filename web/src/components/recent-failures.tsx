/** The failed tasks that ended last, with their error; patched live like any task list (same query keys). */
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { taskListQuery } from '../api/queries';
import { Section } from './section';
import { TimeText } from './time-text';
import { ErrorNotice } from './error-notice';
import { RefreshNotice } from './refresh-notice';

// order=ended: a task created long ago that failed just now comes first, not after the failures of newer tasks.
const FILTER = { state: 'failed', order: 'ended', limit: 8 } as const;

export function RecentFailures() {
  const q = useQuery(taskListQuery(FILTER));
  // A row the stream changed out of `failed` (retried) stays on a live page, marked stale (patch-lists.ts): not a failure now.
  const failures = q.data?.tasks.filter((t) => t.state === 'failed');
  return (
    <Section title="Recent failures" id="failures" aside={<Link to="/tasks?state=failed&order=ended">All failed</Link>}>
      {q.data !== undefined ? <RefreshNotice query={q} what="the recent failures" /> : q.isError && <ErrorNotice error={q.error} />}
      {failures && failures.length === 0 && <p className="muted">No failed tasks.</p>}
      <ul className="failures" aria-busy={q.isPending}>
        {failures?.map((t) => (
          <li key={t.id} className="failure">
            <div className="failure-head">
              <Link to={`/tasks/${t.id}`} className="failure-name">
                {t.name}
              </Link>
              <TimeText iso={t.endedAt ?? t.updatedAt} />
            </div>
            <p className="failure-error">
              {t.error ?? (t.signal ? `killed by ${t.signal}` : t.exitCode !== null ? `exit code ${t.exitCode}` : 'failed')}
            </p>
          </li>
        ))}
      </ul>
    </Section>
  );
}
