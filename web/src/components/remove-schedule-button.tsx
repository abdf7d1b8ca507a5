/**
 * Remove a schedule (DELETE /v1/schedules/:name): two steps (TwoStepButton).
 * Its past tasks stay. The row leaves the list at once; a list refetch that
 * was already under way is cancelled first, so it cannot bring the row back.
 * (Its detail query, keyed by id, is left to expire: the row that used it is gone.)
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api } from '../api/endpoints';
import { qk } from '../api/query-keys';
import type { Schedule, SchedulePage } from '../api/types';
import { TwoStepButton } from './two-step-button';

export function useRemoveSchedule(schedule: Schedule) {
  const qc = useQueryClient();
  const { owner, name, id } = schedule;
  return useMutation({
    mutationFn: () => api.deleteSchedule(owner, name),
    onSuccess: async () => {
      await qc.cancelQueries({ queryKey: qk.scheduleList });
      qc.setQueryData(qk.scheduleList, (cur: SchedulePage | undefined) => (cur ? { ...cur, schedules: cur.schedules.filter((s) => s.id !== id) } : cur));
      // The focused button left with its row: focus the page's content (app-shell's <main>), not the document's start.
      requestAnimationFrame(() => {
        if (!document.activeElement || document.activeElement === document.body) document.getElementById('main')?.focus();
      });
      void qc.invalidateQueries({ queryKey: qk.scheduleList });
    },
  });
}

export function RemoveScheduleButton({ name, remove }: { name: string; remove: ReturnType<typeof useRemoveSchedule> }) {
  return (
    <TwoStepButton
      label="Remove"
      confirmLabel="Confirm remove"
      pendingLabel="Removing…"
      name={`Remove schedule ${name}`}
      confirmName={`Confirm: remove schedule ${name}`}
      pending={remove.isPending}
      onConfirm={() => remove.mutate()}
    />
  );
}
