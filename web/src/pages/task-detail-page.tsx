/** One task: what it runs, its environment and policies, its outputs, attempts, events and log, and the actions on it. */
import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { taskDetailQuery } from '../api/queries';
import { ApiError } from '../api/api-error';
import { PageHeader } from '../components/page-header';
import { StateBadge } from '../components/state-badge';
import { TaskActions } from '../components/task-actions';
import { Section } from '../components/section';
import { KvList } from '../components/kv-list';
import { CommandView } from '../components/command-view';
import { EnvTable } from '../components/env-table';
import { OutputsTable } from '../components/outputs-table';
import { AttemptsTable } from '../components/attempts-table';
import { EventsTimeline } from '../components/events-timeline';
import { LogViewer } from '../components/log-viewer';
import { LabelsList } from '../components/labels-list';
import { TimeText } from '../components/time-text';
import { RetryPolicyText } from '../components/retry-policy-text';
import { TaskResultText } from '../components/task-result-text';
import { ErrorNotice } from '../components/error-notice';
import { RefreshNotice } from '../components/refresh-notice';
import { EmptyState } from '../components/empty-state';
import { formatDuration } from '../format/duration';
import { TERMINAL_STATES, type TaskDetail as TaskDetailData } from '../api/types';
import { useRunGeneration } from '../hooks/use-run-generation';
import { skipReasonText } from '../dag/step-text';
import { dagRunPath } from '../dag/dag-links';

const TASK_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

export function TaskDetailPage() {
  const { id = '' } = useParams();
  const valid = TASK_ID.test(id);
  const q = useQuery({ ...taskDetailQuery(id), enabled: valid });
  if (!valid || (q.error instanceof ApiError && q.error.status === 404)) {
    return (
      <>
        <PageHeader title="Task not found" docTitle="Task not found" />
        <EmptyState title={`There is no task ${id} that you can see.`}>
          <Link to="/tasks">All tasks</Link>
        </EmptyState>
      </>
    );
  }
  if (!q.data) return q.isError ? <ErrorNotice error={q.error} retry={() => void q.refetch()} title="Could not load the task" /> : <DetailSkeleton />;
  return (
    <>
      <RefreshNotice query={q} what="the task" />
      <TaskDetail detail={q.data} />
    </>
  );
}

function TaskDetail({ detail }: { detail: TaskDetailData }) {
  const { task, attempts, events } = detail;
  const generation = useRunGeneration(task.state, task.attempts);
  return (
    <>
      <PageHeader
        docTitle={task.name}
        title={
          <span className="detail-title">
            <span className="detail-name">{task.name}</span>
            <StateBadge state={task.state} />
          </span>
        }
        subtitle={
          <>
            <code className="task-id-full">{task.id}</code> · {task.owner} · created <TimeText iso={task.createdAt} />
          </>
        }
        actions={<TaskActions task={task} />}
      />
      <div className="detail-grid">
        <Section title="Summary" id="summary">
          <KvList
            items={[
              ['State', <StateBadge key="s" state={task.state} />],
              ['Result', <TaskResultText key="r" result={task.result} />],
              ['Attempts', `${task.attempts} (${task.retriesUsed} retries used${task.lostCount ? `, lost ${task.lostCount}×` : ''})`],
              ['Owner', task.owner],
              ['Kind', task.kind],
              ['Priority', String(task.priority)],
              ['Timeout', task.timeoutMs === null ? 'none' : formatDuration(task.timeoutMs)],
              ['Retry policy', <RetryPolicyText key="p" retry={task.retry} />],
              ['Created', <TimeText key="c" iso={task.createdAt} />],
              ['Updated', <TimeText key="u" iso={task.updatedAt} />],
              ...(task.runAfter ? ([['Runs after', <TimeText key="a" iso={task.runAfter} />]] as const) : []),
              ...(task.dagRunId
                ? ([
                    [
                      'DAG step',
                      <span key="d">
                        step <strong>{task.dagStep}</strong> of run{' '}
                        <Link to={dagRunPath(task.dagRunId)} data-testid="task-dag-run">
                          <code>{task.dagRunId}</code>
                        </Link>
                      </span>,
                    ],
                  ] as const)
                : []),
              ...(task.skipReason ? ([['Skipped because', <span key="k" data-testid="task-skip-reason">{skipReasonText(task.skipReason)}</span>]] as const) : []),
              ['Labels', <LabelsList key="l" labels={task.labels} />],
              ['Requires', <LabelsList key="q" labels={task.requires} empty="any worker" />],
            ]}
          />
        </Section>
        <div className="detail-side">
          <Section title={task.script !== null ? 'Script' : 'Command'} id="command">
            <CommandView task={task} />
          </Section>
          <Section title="Environment" id="env">
            <EnvTable env={task.env} redacted={task.envRedacted} />
          </Section>
        </div>
      </div>
      <Section title="Outputs" id="outputs">
        <OutputsTable outputs={task.outputs} />
      </Section>
      <Section title="Attempts" id="attempts">
        <AttemptsTable attempts={attempts} />
      </Section>
      <Section title="Log" id="log">
        <LogViewer taskId={task.id} generation={generation} active={!TERMINAL_STATES.has(task.state)} />
      </Section>
      <Section title="Events" id="events">
        <EventsTimeline events={events} />
      </Section>
    </>
  );
}

function DetailSkeleton() {
  return (
    <div aria-busy="true" className="detail-skeleton">
      <span className="skeleton skeleton-title" />
      <div className="detail-grid">
        <div className="card skeleton-card" />
        <div className="card skeleton-card" />
        <div className="card skeleton-card" />
      </div>
    </div>
  );
}
