/**
 * One DAG run: its graph with each step's state (live), the counts by state,
 * Cancel and Retry, the timeline with the critical path and which step to
 * make faster, and the run's parameters. Live: the stream's changes to this
 * run's tasks patch the steps at once and refetch the detail, debounced
 * (live/dag-run-patcher.ts); a slow refetch is the fallback (api/queries.ts).
 */
import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { dagRunDetailQuery } from '../api/queries';
import { ApiError } from '../api/api-error';
import { useSignedIn } from '../auth/session-context';
import type { DagRunDetail } from '../api/types';
import { dagPath } from '../dag/dag-links';
import { PageHeader } from '../components/page-header';
import { Section } from '../components/section';
import { StateBadge } from '../components/state-badge';
import { DagGraph } from '../components/dag-graph';
import { DagGantt } from '../components/dag-gantt';
import { DagRunActions } from '../components/dag-run-actions';
import { DagRunCounts } from '../components/dag-run-counts';
import { CriticalPathNote } from '../components/critical-path-note';
import { KvList } from '../components/kv-list';
import { ErrorNotice } from '../components/error-notice';
import { RefreshNotice } from '../components/refresh-notice';
import { EmptyState } from '../components/empty-state';
import { TimeText } from '../components/time-text';
import { DurationText } from '../components/duration-text';

const RUN_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

export function DagRunPage() {
  const { id = '' } = useParams();
  const valid = RUN_ID.test(id);
  const q = useQuery({ ...dagRunDetailQuery(id), enabled: valid });
  if (!valid || (q.error instanceof ApiError && q.error.status === 404)) {
    return (
      <>
        <PageHeader title="Run not found" docTitle="Run not found" />
        <EmptyState title={`There is no DAG run ${id} that you can see.`}>
          <Link to="/dags">All DAGs</Link>
        </EmptyState>
      </>
    );
  }
  if (!q.data) return q.isError ? <ErrorNotice error={q.error} retry={() => void q.refetch()} title="Could not load the run" /> : <div className="card skeleton-card" aria-busy="true" />;
  return (
    <>
      <RefreshNotice query={q} what="the run" />
      <RunView detail={q.data} />
    </>
  );
}

function RunView({ detail }: { detail: DagRunDetail }) {
  const me = useSignedIn();
  const { run, steps } = detail;
  const shapeKey = `${run.dagId}:${run.version}`;
  const params = Object.entries(run.params);
  return (
    <>
      <PageHeader
        docTitle={`${run.dag} run`}
        title={
          <span className="detail-title">
            <span className="detail-name">
              <Link to={dagPath(run.dag, run.owner, me.user)}>{run.dag}</Link> run
            </span>
            <span data-testid="run-state">
              <StateBadge state={run.state} />
            </span>
          </span>
        }
        subtitle={
          <>
            <code className="task-id-full">{run.id}</code> · version {run.version} · {run.owner} · started <TimeText iso={run.createdAt} /> ·{' '}
            <DurationText startedAt={run.createdAt} endedAt={run.endedAt} durationMs={null} />
            {run.scheduleId && <> · scheduled</>}
          </>
        }
        actions={<DagRunActions run={run} />}
      />
      <DagRunCounts counts={detail.counts} total={steps.length} />
      <Section title="Graph" id="graph">
        <DagGraph steps={steps} shapeKey={shapeKey} label={`Graph of run ${run.id}`} criticalPath={detail.criticalPath} />
      </Section>
      <Section title="Timeline" id="timeline">
        <CriticalPathNote detail={detail} />
        <ul className="gantt-legend" aria-label="Legend">
          <li>
            <span className="gantt-key gantt-key-wait" aria-hidden="true" /> waiting for a worker
          </li>
          <li>
            <span className="gantt-key gantt-key-run" aria-hidden="true" /> running (state colour)
          </li>
          <li>
            <span aria-hidden="true">◆</span> critical path
          </li>
        </ul>
        <DagGantt detail={detail} shapeKey={shapeKey} />
      </Section>
      {params.length > 0 && (
        <Section title="Parameters" id="params">
          <KvList items={params.map(([k, v]) => [k, <code key={k}>{v}</code>] as const)} />
        </Section>
      )}
    </>
  );
}
