/**
 * Cancel (two steps, TwoStepButton: a stray click or Enter does not stop a
 * run) while a run is running; Retry once it failed or was cancelled (its
 * failed and cancelled steps and those skipped because of them run again;
 * succeeded ones are kept). The API's refusal (409: the run ended meanwhile,
 * a cancelled step's attempt is still being stopped, nothing to retry) is
 * shown next to the buttons.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api } from '../api/endpoints';
import { errorMessage } from '../api/api-error';
import { qk } from '../api/query-keys';
import type { DagRun } from '../api/types';
import { TwoStepButton } from './two-step-button';

export function DagRunActions({ run }: { run: DagRun }) {
  const qc = useQueryClient();
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: qk.dagRunDetail(run.id) });
    void qc.invalidateQueries({ queryKey: qk.dagRunLists });
  };
  const cancel = useMutation({ mutationFn: () => api.cancelDagRun(run.id), onSettled: refresh });
  const retry = useMutation({ mutationFn: () => api.retryDagRun(run.id), onSettled: refresh });
  // Only the last action's answer is shown.
  const last = cancel.submittedAt > retry.submittedAt ? cancel : retry;
  return (
    <div className="run-actions">
      {run.state === 'running' && (
        <TwoStepButton
          label="Cancel run"
          confirmLabel="Confirm cancel"
          pendingLabel="Cancelling…"
          name={`Cancel run ${run.id}`}
          confirmName={`Confirm: cancel run ${run.id}`}
          pending={cancel.isPending}
          onConfirm={() => {
            retry.reset();
            cancel.mutate();
          }}
        />
      )}
      {(run.state === 'failed' || run.state === 'cancelled') && (
        <button
          type="button"
          className="btn btn-small"
          disabled={retry.isPending}
          aria-label={`Retry run ${run.id}`}
          onClick={() => {
            cancel.reset();
            retry.mutate();
          }}
        >
          {retry.isPending ? 'Retrying…' : 'Retry'}
        </button>
      )}
      {last.isError && (
        <span className="inline-error" role="alert" data-testid="run-action-error">
          {errorMessage(last.error)}
        </span>
      )}
    </div>
  );
}
