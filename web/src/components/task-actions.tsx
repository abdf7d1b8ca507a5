/**
 * Cancel (any non-terminal task), Retry (failed or cancelled), Submit again
 * (the submit form filled from this task). The API decides: a 409 (the task
 * moved on meanwhile) is shown as its message.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api } from '../api/endpoints';
import { errorMessage } from '../api/api-error';
import { qk } from '../api/query-keys';
import { TERMINAL_STATES, type Task, type TaskDetail } from '../api/types';

export function TaskActions({ task }: { task: Task }) {
  const qc = useQueryClient();
  const onDone = (res: { task: Task }) => {
    // The live stream may already have brought a later change (the retried task
    // ran and failed again before this answer was read): never put an older task back.
    qc.setQueryData<TaskDetail>(qk.taskDetail(task.id), (cur) =>
      cur && res.task.updatedAt >= cur.task.updatedAt ? { ...cur, task: { ...res.task, envRedacted: res.task.envRedacted ?? cur.task.envRedacted } } : cur,
    );
    void qc.invalidateQueries({ queryKey: qk.taskDetail(task.id) });
  };
  const cancel = useMutation({ mutationFn: () => api.cancelTask(task.id), onSuccess: onDone });
  const retry = useMutation({ mutationFn: () => api.retryTask(task.id), onSuccess: onDone });
  const terminal = TERMINAL_STATES.has(task.state);
  const err = cancel.error ?? retry.error;
  return (
    <div className="task-actions">
      {!terminal && (
        <button type="button" className="btn btn-danger" onClick={() => cancel.mutate()} disabled={cancel.isPending}>
          {cancel.isPending ? 'Cancelling…' : 'Cancel task'}
        </button>
      )}
      {(task.state === 'failed' || task.state === 'cancelled') && (
        <button type="button" className="btn" onClick={() => retry.mutate()} disabled={retry.isPending}>
          {retry.isPending ? 'Retrying…' : 'Retry'}
        </button>
      )}
      <Link className="btn btn-quiet" to={`/submit?from=${task.id}`}>
        Submit again
      </Link>
      {err && (
        <p className="inline-error" role="alert">
          {errorMessage(err)}
        </p>
      )}
    </div>
  );
}
