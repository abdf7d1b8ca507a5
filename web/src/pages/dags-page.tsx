/**
 * DAGs: every DAG definition the caller may see (an admin: everyone's), by
 * name, each linking to its page. Definitions are not on the live stream;
 * the list is refetched every 15 s and on focus (api/queries.ts).
 */
import { useQuery } from '@tanstack/react-query';
import { dagListQuery } from '../api/queries';
import { useSignedIn } from '../auth/session-context';
import { PageHeader } from '../components/page-header';
import { DagsTable } from '../components/dags-table';
import { QueryErrorNotice } from '../components/refresh-notice';
import { EmptyState } from '../components/empty-state';

export function DagsPage() {
  const me = useSignedIn();
  const q = useQuery(dagListQuery());
  const dags = q.data ? [...q.data.dags].sort((a, b) => a.name.localeCompare(b.name) || a.owner.localeCompare(b.owner)) : undefined;
  return (
    <>
      <PageHeader
        title="DAGs"
        docTitle="DAGs"
        subtitle={dags ? `${dags.length} DAG${dags.length === 1 ? '' : 's'}: workflows of steps that run in dependency order` : 'Workflows of steps that run in dependency order'}
      />
      <QueryErrorNotice query={q} what="the DAGs" loadTitle="Could not load DAGs" />
      {dags === undefined && !q.isError && <div className="card skeleton-card" aria-busy="true" />}
      {dags && dags.length === 0 && (
        <EmptyState title="No DAGs yet">
          <p>
            Apply one from a file with <code>drover dag apply FILE</code> (YAML or JSON: a name and its steps, each with <code>depends_on</code>).
          </p>
        </EmptyState>
      )}
      {dags && dags.length > 0 && <DagsTable dags={dags} me={me.user} showOwner={me.role === 'admin'} />}
      {q.data?.nextCursor && <p className="muted">Showing the first {q.data.dags.length}; the CLI lists them all (drover dag ls).</p>}
    </>
  );
}
