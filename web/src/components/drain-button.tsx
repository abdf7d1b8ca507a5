/**
 * Drain (admins): two steps (TwoStepButton), so a stray click or Enter does
 * not take a worker out of service.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api } from '../api/endpoints';
import { errorMessage } from '../api/api-error';
import { qk } from '../api/query-keys';
import { TwoStepButton } from './two-step-button';

export function DrainButton({ workerId }: { workerId: string }) {
  const qc = useQueryClient();
  const drain = useMutation({
    mutationFn: () => api.drainWorker(workerId),
    onSuccess: () => void qc.invalidateQueries({ queryKey: qk.workers }),
  });
  return (
    <span className="drain">
      <TwoStepButton
        label="Drain"
        confirmLabel="Confirm drain"
        pendingLabel="Draining…"
        name={`Drain worker ${workerId}`}
        confirmName={`Confirm: drain worker ${workerId}`}
        pending={drain.isPending}
        onConfirm={() => drain.mutate()}
      />
      {drain.isError && (
        <span className="inline-error" role="alert">
          {errorMessage(drain.error)}
        </span>
      )}
    </span>
  );
}
