/** A worker's running attempts, each a link to its task with its run time so far. */
import { Link } from 'react-router';
import type { RunningAttemptRef } from '../api/types';
import { DurationText } from './duration-text';

export function RunningAttemptsList({ attempts }: { attempts: RunningAttemptRef[] }) {
  if (attempts.length === 0) return <span className="muted">idle</span>;
  return (
    <ul className="running-list">
      {attempts.map((a) => (
        <li key={a.attemptId}>
          <Link to={`/tasks/${a.taskId}`}>{a.taskName}</Link> <span className="muted"><DurationText startedAt={a.startedAt} endedAt={null} durationMs={null} /></span>
        </li>
      ))}
    </ul>
  );
}
