/** Pause/Resume and Run now for one schedule; errors inline, like the other action buttons. */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api } from '../api/endpoints';
import { errorMessage } from '../api/api-error';
import { qk } from '../api/query-keys';
import type { Schedule } from '../api/types';

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
    onSuccess: () => {
      refresh();
      void qc.invalidateQueries({ queryKey: qk.taskLists });
    },
  });
  const error = toggle.error ?? run.error;
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
      {run.data && !run.isPending && (
        <Link to={`/tasks/${run.data.task.id}`} className="schedule-run-link" data-testid="run-now-task">
          Started task
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
