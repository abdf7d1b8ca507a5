/** The tasks table: header, rows (or placeholders of the same size), empty state. */
import type { ReactNode } from 'react';
import type { TaskSummary } from '../api/types';
import { TaskRow } from './task-row';
import { SkeletonRows } from './skeleton-rows';

interface Props {
  tasks: TaskSummary[] | undefined;
  stale?: readonly string[];
  fresh?: readonly string[];
  loading: boolean;
  /** Placeholder rows while loading. */
  placeholderRows?: number;
  caption: string;
  empty: ReactNode;
}

export function TasksTable({ tasks, stale = [], fresh = [], loading, placeholderRows = 10, caption, empty }: Props) {
  const staleSet = new Set(stale);
  const freshSet = new Set(fresh);
  return (
    <div className="table-wrap">
      <table className="table tasks-table" aria-busy={loading}>
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col" className="col-state">State</th>
            <th scope="col" className="col-name">Name</th>
            <th scope="col" className="col-owner">Owner</th>
            <th scope="col" className="col-worker">Worker</th>
            <th scope="col" className="col-attempts num">Attempts</th>
            <th scope="col" className="col-created">Created</th>
            <th scope="col" className="col-duration num">Duration</th>
          </tr>
        </thead>
        <tbody>
          {tasks === undefined ? (
            <SkeletonRows rows={placeholderRows} cols={7} />
          ) : (
            tasks.map((t) => <TaskRow key={t.id} task={t} stale={staleSet.has(t.id)} fresh={freshSet.has(t.id)} />)
          )}
        </tbody>
      </table>
      {tasks !== undefined && tasks.length === 0 && empty}
    </div>
  );
}
