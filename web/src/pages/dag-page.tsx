/**
 * One DAG (its newest version): the definition drawn as a graph, a Run form
 * (a field per declared parameter), its runs newest first (live: a change
 * to any step's task refetches the list), and its steps as a table.
 * `?owner=` names another user's DAG (admins).
 */
import { useQuery } from '@tanstack/react-query';
import { Link, useParams, useSearchParams } from 'react-router';
import { dagDetailQuery, dagRunListQuery } from '../api/queries';
import { ApiError } from '../api/api-error';
import { useSignedIn } from '../auth/session-context';
import type { Dag } from '../api/types';
import { PageHeader } from '../components/page-header';
import { Section } from '../components/section';
import { DagGraph } from '../components/dag-graph';
import { DagRunForm } from '../components/dag-run-form';
import { DagRunsTable } from '../components/dag-runs-table';
import { DagStepsTable } from '../components/dag-steps-table';
import { ErrorNotice } from '../components/error-notice';
import { QueryErrorNotice, RefreshNotice } from '../components/refresh-notice';
import { EmptyState } from '../components/empty-state';
import { TimeText } from '../components/time-text';

export function DagPage() {
  const me = useSignedIn();
  const { name = '' } = useParams();
  const [search] = useSearchParams();
  const owner = search.get('owner') ?? me.user;
  const q = useQuery(dagDetailQuery(owner, name));
  if (q.error instanceof ApiError && (q.error.status === 404 || q.error.status === 400)) {
    return (
      <>
        <PageHeader title="DAG not found" docTitle="DAG not found" />
        <EmptyState title={`There is no DAG ${name}${owner !== me.user ? ` of ${owner}` : ''} that you can see.`}>
          <Link to="/dags">All DAGs</Link>
        </EmptyState>
      </>
    );
  }
  if (!q.data) return q.isError ? <ErrorNotice error={q.error} retry={() => void q.refetch()} title="Could not load the DAG" /> : <div className="card skeleton-card" aria-busy="true" />;
  return (
    <>
      <RefreshNotice query={q} what="the DAG" />
      <DagView dag={q.data.dag} />
    </>
  );
}

function DagView({ dag }: { dag: Dag }) {
  const runs = useQuery(dagRunListQuery(dag.owner, dag.name));
  return (
    <>
      <PageHeader
        docTitle={`DAG ${dag.name}`}
        title={dag.name}
        subtitle={
          <>
            version {dag.version} · {dag.owner} · {dag.steps.length} step{dag.steps.length === 1 ? '' : 's'} · applied <TimeText iso={dag.createdAt} />
            {dag.description && (
              <>
                <br />
                <span className="dag-description-full">{dag.description}</span>
              </>
            )}
          </>
        }
      />
      <Section title="Run" id="run">
        {/* Keyed by version: a new version's declared parameters start from their own defaults. */}
        <DagRunForm key={dag.id} dag={dag} />
      </Section>
      <Section title="Graph" id="graph">
        <DagGraph steps={dag.steps} shapeKey={`${dag.id}:${dag.version}`} label={`Graph of DAG ${dag.name}`} />
      </Section>
      <Section title="Runs" id="runs">
        <QueryErrorNotice query={runs} what="the runs" loadTitle="Could not load the runs" />
        {runs.data && runs.data.runs.length === 0 && <EmptyState title="No runs yet" />}
        {runs.data && runs.data.runs.length > 0 && <DagRunsTable runs={runs.data.runs} />}
        {runs.data?.nextCursor && <p className="muted">The newest {runs.data.runs.length} runs; drover dag runs {dag.name} lists them all.</p>}
      </Section>
      <Section title="Steps" id="steps">
        <DagStepsTable steps={dag.steps} />
      </Section>
    </>
  );
}
