/**
 * Schedules: every cron schedule the caller may see (an admin: everyone's),
 * oldest first. Live by refetching: every 2 s, and at once when the stream
 * reports a change to a task a schedule made (api/queries.ts).
 */
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { schedulesQuery } from '../api/queries';
import { useSignedIn } from '../auth/session-context';
import { PageHeader } from '../components/page-header';
import { SchedulesTable } from '../components/schedules-table';
import { QueryErrorNotice } from '../components/refresh-notice';
import { EmptyState } from '../components/empty-state';

export function SchedulesPage() {
  const me = useSignedIn();
  const q = useQuery(schedulesQuery());
  const schedules = q.data?.schedules;
  const paused = schedules?.filter((s) => s.paused).length ?? 0;
  return (
    <>
      <PageHeader
        title="Schedules"
        docTitle="Schedules"
        subtitle={schedules ? `${schedules.length} schedule${schedules.length === 1 ? '' : 's'}, ${paused} paused` : 'Cron schedules that run tasks and DAGs'}
        actions={
          <Link to="/schedules/new" className="btn btn-primary">
            Add schedule
          </Link>
        }
      />
      <QueryErrorNotice query={q} what="the schedules" loadTitle="Could not load schedules" />
      {schedules === undefined && !q.isError && <div className="card skeleton-card" aria-busy="true" />}
      {schedules && schedules.length === 0 && (
        <EmptyState title="No schedules yet">
          <p>
            <Link to="/schedules/new">Add the first one</Link>, or create one with <code>drover cron add NAME --schedule EXPR -- CMD</code>.
          </p>
        </EmptyState>
      )}
      {schedules && schedules.length > 0 && <SchedulesTable schedules={schedules} showOwner={me.role === 'admin'} me={me.user} />}
    </>
  );
}
