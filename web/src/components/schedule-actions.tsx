/**
 * Pause/Resume, Run now and Remove (two steps) for one schedule; errors
 * inline, like the other action buttons. Run now links to what it started:
 * a task schedule's task, or a DAG schedule's run.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api } from '../api/endpoints';
import { errorMessage } from '../api/api-error';
import { qk } from '../api/query-keys';
import type { Schedule } from '../api/types';
import { dagRunPath } from '../dag/dag-links';
import { RemoveScheduleButton, useRemoveSchedule } from './remove-schedule-button';

export function ScheduleActions({ schedule }: { schedule: Schedule }) {
  const qc = useQueryClient();
  const { owner, name, paused } = schedule;
  const refresh = () => void qc.invalidateQueries({ queryKey: qk.schedules });
  const toggle = useMutation({
    mutationFn: () => (paused ? api.resumeSchedule(owner, name) : api.pauseSchedule(owner, name)),
    onSuccess: (r) => {
      qc.setQueryData(qk.scheduleList, (cur: { schedules: Schedule[]; nextCursor: string | null } | undefined) =>
        cur ? { ...cur, schedules: cur.schedules.map((s) => (s.id === r.schedule.id ? r.schedule : s)) } : cur,
      );
      refresh();
    },
  });
  const run = useMutation({
    mutationFn: () => api.runSchedule(owner, name),
    onSuccess: (r) => {
      refresh();
      void qc.invalidateQueries({ queryKey: r.run ? qk.dagRunLists : qk.taskLists });
    },
  });
  const remove = useRemoveSchedule(schedule);
  const error = toggle.error ?? run.error ?? remove.error;
  return (
    <div className="schedule-actions">
      <button
        type="button"
        className="btn btn-small"
        disabled={toggle.isPending}
        onClick={() => toggle.mutate()}
        aria-label={`${paused ? 'Resume' : 'Pause'} schedule ${name}`}
      >
        {toggle.isPending ? (paused ? 'Resuming…' : 'Pausing…') : paused ? 'Resume' : 'Pause'}
      </button>
      <button type="button" className="btn btn-small" disabled={run.isPending} onClick={() => run.mutate()} aria-label={`Run schedule ${name} now`}>
        {run.isPending ? 'Starting…' : 'Run now'}
      </button>
      <RemoveScheduleButton name={name} remove={remove} />
      {run.data?.task && !run.isPending && (
        <Link to={`/tasks/${run.data.task.id}`} className="schedule-run-link" data-testid="run-now-task">
          Started task
        </Link>
      )}
      {run.data?.run && !run.isPending && (
        <Link to={dagRunPath(run.data.run.id)} className="schedule-run-link" data-testid="run-now-dag-run">
          Started DAG run
        </Link>
      )}
      {error && (
        <span className="inline-error" role="alert">
          {errorMessage(error)}
        </span>
      )}
    </div>
  );
}
