/**
 * Drain (admins): two steps, so a stray click or Enter does not take a worker
 * out of service. The first press arms it for 5 s; the second drains.
 */
import { useEffect, useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api } from '../api/endpoints';
import { errorMessage } from '../api/api-error';
import { qk } from '../api/query-keys';

export function DrainButton({ workerId }: { workerId: string }) {
  const qc = useQueryClient();
  const [armed, setArmed] = useState(false);
  const drain = useMutation({
    mutationFn: () => api.drainWorker(workerId),
    onSuccess: () => void qc.invalidateQueries({ queryKey: qk.workers }),
    onSettled: () => setArmed(false),
  });
  useEffect(() => {
    if (!armed) return;
    const t = setTimeout(() => setArmed(false), 5000);
    return () => clearTimeout(t);
  }, [armed]);
  return (
    <span className="drain">
      <button
        type="button"
        className={armed ? 'btn btn-small btn-danger' : 'btn btn-small'}
        disabled={drain.isPending}
        onClick={() => (armed ? drain.mutate() : setArmed(true))}
        aria-label={armed ? `Confirm: drain worker ${workerId}` : `Drain worker ${workerId}`}
      >
        {drain.isPending ? 'Draining…' : armed ? 'Confirm drain' : 'Drain'}
      </button>
      {drain.isError && (
        <span className="inline-error" role="alert">
          {errorMessage(drain.error)}
        </span>
      )}
    </span>
  );
}
