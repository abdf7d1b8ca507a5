/** Workers: state, id and host, labels, slots, last heartbeat, running attempts; Drain for admins. */
import type { WorkerInfo } from '../api/types';
import { StateBadge } from './state-badge';
import { LabelsList } from './labels-list';
import { SlotsMeter } from './slots-meter';
import { AgeText } from './age-text';
import { RunningAttemptsList } from './running-attempts-list';
import { DrainButton } from './drain-button';

export function WorkersTable({ workers, isAdmin }: { workers: WorkerInfo[]; isAdmin: boolean }) {
  return (
    <div className="table-wrap">
      <table className="table workers-table">
        <caption className="visually-hidden">Workers</caption>
        <thead>
          <tr>
            <th scope="col">State</th>
            <th scope="col">Worker</th>
            <th scope="col">Labels</th>
            <th scope="col">Slots</th>
            <th scope="col">Last heartbeat</th>
            <th scope="col">Running</th>
            {isAdmin && <th scope="col"><span className="visually-hidden">Actions</span></th>}
          </tr>
        </thead>
        <tbody>
          {workers.map((w) => (
            <tr key={w.id} data-worker-id={w.id} data-state={w.state}>
              <td data-label="State">
                <StateBadge state={w.state} />
              </td>
              <td data-label="Worker">
                <div>
                  <span className="worker-id">{w.id}</span>
                  <span className="worker-host">{w.hostname}</span>
                </div>
              </td>
              <td data-label="Labels">
                <LabelsList labels={w.labels} />
              </td>
              <td data-label="Slots">
                <SlotsMeter used={w.slotsUsed} total={w.slots} />
              </td>
              <td data-label="Heartbeat">
                <AgeText iso={w.lastSeenAt} />
              </td>
              <td data-label="Running">
                <RunningAttemptsList attempts={w.runningAttempts} />
              </td>
              {isAdmin && (
                <td className="col-actions">{(w.state === 'connected' || w.state === 'lost') && <DrainButton workerId={w.id} />}</td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
