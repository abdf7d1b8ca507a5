/** Tasks: filters held in the URL, keyset pages, rows patched live by the stream. */
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { taskListQuery } from '../api/queries';
import type { LivePage } from '../live/patch-lists';
import { useSignedIn } from '../auth/session-context';
import { useTaskFilter } from '../hooks/use-task-filter';
import { PageHeader } from '../components/page-header';
import { TaskFilters } from '../components/task-filters';
import { TasksTable } from '../components/tasks-table';
import { Pager } from '../components/pager';
import { QueryErrorNotice } from '../components/refresh-notice';
import { EmptyState } from '../components/empty-state';

export function TasksPage() {
  const me = useSignedIn();
  const { filter, setFilter, older, newer, newest, pageNumber, hasNewer } = useTaskFilter();
  const q = useQuery(taskListQuery(filter));
  const page = q.data as LivePage | undefined;
  const filtered = !!(filter.state || filter.name || filter.owner || filter.id || filter.createdAfter || filter.createdBefore);
  const knownPage = !hasNewer ? 1 : pageNumber > 1 ? pageNumber : null;
  return (
    <>
      <PageHeader
        title="Tasks"
        docTitle="Tasks"
        subtitle={me.role === 'admin' ? 'Every user’s tasks, newest first' : 'Your tasks, newest first'}
        actions={
          <Link to="/submit" className="btn btn-primary">
            Submit a task
          </Link>
        }
      />
      <TaskFilters filter={filter} isAdmin={me.role === 'admin'} onChange={setFilter} />
      <QueryErrorNotice query={q} what="the tasks" loadTitle="Could not load tasks" />
      {/* A failed first load shows the error alone: placeholders under it would say rows are still coming. */}
      {!(q.isError && page === undefined) && <TasksTable
        tasks={page?.tasks}
        stale={page?.stale}
        fresh={page?.fresh}
        loading={q.isFetching}
        placeholderRows={Math.min(filter.limit ?? 50, 12)}
        caption="Tasks"
        empty={
          <EmptyState title={filtered ? 'No task matches these filters' : 'No tasks yet'}>
            {filtered ? (
              <button type="button" className="btn" onClick={() => setFilter({ limit: filter.limit })}>
                Clear the filters
              </button>
            ) : (
              <Link to="/submit">Submit the first one</Link>
            )}
          </EmptyState>
        }
      />}
      <Pager
        hasNewer={hasNewer}
        canStepNewer={pageNumber > 1}
        nextCursor={page?.nextCursor}
        pageNumber={knownPage}
        shown={page?.tasks.length ?? 0}
        busy={q.isFetching && q.isPlaceholderData}
        onNewest={newest}
        onNewer={newer}
        onOlder={older}
      />
    </>
  );
}
