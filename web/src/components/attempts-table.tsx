/** Every attempt: number, worker, start, duration, exit code or signal, outcome and error. */
import type { Attempt } from '../api/types';
import { StateBadge } from './state-badge';
import { TimeText } from './time-text';
import { DurationText } from './duration-text';

export function AttemptsTable({ attempts }: { attempts: Attempt[] }) {
  if (attempts.length === 0) return <p className="muted">No attempt yet: the task has not been given to a worker.</p>;
  return (
    <div className="table-wrap">
      <table className="table attempts-table">
        <thead>
          <tr>
            <th scope="col" className="num">#</th>
            <th scope="col">Outcome</th>
            <th scope="col">Worker</th>
            <th scope="col">Started</th>
            <th scope="col" className="num">Duration</th>
            <th scope="col">Exit</th>
            <th scope="col">Error</th>
          </tr>
        </thead>
        <tbody>
          {attempts.map((a) => (
            <tr key={a.id} data-attempt={a.number}>
              <td className="num">{a.number}</td>
              <td>
                <StateBadge state={a.state} />
              </td>
              <td>{a.workerId}</td>
              <td>
                <TimeText iso={a.startedAt} />
              </td>
              <td className="num">
                <DurationText startedAt={a.startedAt} endedAt={a.endedAt} durationMs={a.durationMs} />
              </td>
              <td>{a.signal ? `signal ${a.signal}` : a.exitCode !== null ? `exit ${a.exitCode}` : <span className="muted">—</span>}</td>
              <td className="error-text">{a.error ?? <span className="muted">—</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
