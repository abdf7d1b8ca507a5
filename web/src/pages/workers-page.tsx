/** Workers: every agent the store knows, connected ones first. */
import { useQuery } from '@tanstack/react-query';
import { workersQuery } from '../api/queries';
import type { WorkerInfo } from '../api/types';
import { useSignedIn } from '../auth/session-context';
import { PageHeader } from '../components/page-header';
import { WorkersTable } from '../components/workers-table';
import { QueryErrorNotice } from '../components/refresh-notice';
import { EmptyState } from '../components/empty-state';

const ORDER: Record<string, number> = { connected: 0, draining: 1, lost: 2, disconnected: 3 };

export function sortWorkers(ws: readonly WorkerInfo[]): WorkerInfo[] {
  return [...ws].sort((a, b) => (ORDER[a.state] ?? 9) - (ORDER[b.state] ?? 9) || a.id.localeCompare(b.id));
}

export function WorkersPage() {
  const me = useSignedIn();
  const q = useQuery(workersQuery(5_000));
  const workers = q.data ? sortWorkers(q.data.workers) : undefined;
  const online = workers?.filter((w) => w.state === 'connected' || w.state === 'draining').length ?? 0;
  return (
    <>
      <PageHeader
        title="Workers"
        docTitle="Workers"
        subtitle={workers ? `${online} online of ${workers.length} known` : 'Agents that run tasks'}
      />
      <QueryErrorNotice query={q} what="the workers" loadTitle="Could not load workers" />
      {workers === undefined && !q.isError && <div className="card skeleton-card" aria-busy="true" />}
      {workers && workers.length === 0 && (
        <EmptyState title="No worker has connected yet">
          <p>
            Start one with <code>drover worker --server URL</code> and a worker token.
          </p>
        </EmptyState>
      )}
      {workers && workers.length > 0 && <WorkersTable workers={workers} isAdmin={me.role === 'admin'} />}
    </>
  );
}
