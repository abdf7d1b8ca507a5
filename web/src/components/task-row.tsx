/**
 * One row of the tasks table, at a fixed height (styles/table.css), so rows
 * patched by the live stream never change the layout. On a phone the same
 * cells are laid out as a two-line card (CSS only).
 */
import { memo } from 'react';
import { Link } from 'react-router';
import type { TaskSummary } from '../api/types';
import { StateBadge } from './state-badge';
import { TimeText } from './time-text';
import { DurationText } from './duration-text';

export const TaskRow = memo(function TaskRow({ task, stale, fresh }: { task: TaskSummary; stale: boolean; fresh: boolean }) {
  const cls = `task-row${stale ? ' stale' : ''}${fresh ? ' fresh' : ''}`;
  return (
    <tr className={cls} data-task-id={task.id} data-state={task.state} title={stale ? 'No longer matches the filter (changed while shown)' : undefined}>
      <td className="col-state">
        <StateBadge state={task.state} />
      </td>
      <td className="col-name">
        <Link to={`/tasks/${task.id}`} className="task-link">
          <span className="task-name">{task.name}</span>
        </Link>
        <code className="task-id">{task.id}</code>
      </td>
      <td className="col-owner" data-label="Owner">
        {task.owner}
      </td>
      <td className="col-worker" data-label="Worker">
        {task.workerId ?? <span className="muted">—</span>}
      </td>
      <td className="col-attempts num" data-label="Attempts">
        {task.attempts}
      </td>
      <td className="col-created" data-label="Created">
        <TimeText iso={task.createdAt} />
      </td>
      <td className="col-duration num" data-label="Duration">
        <DurationText startedAt={task.startedAt} endedAt={task.endedAt} durationMs={task.durationMs} />
      </td>
    </tr>
  );
});
