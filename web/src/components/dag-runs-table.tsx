/** A DAG's runs, newest first: state, a link to the run's page, its steps by state, when it started, how long it took (or has taken), version, and parameters. */
import { Link } from 'react-router';
import type { DagRunListItem } from '../api/types';
import { dagRunPath } from '../dag/dag-links';
import { StateBadge } from './state-badge';
import { TimeText } from './time-text';
import { DurationText } from './duration-text';
import { StepCountsText } from './step-counts-text';

export function DagRunsTable({ runs }: { runs: DagRunListItem[] }) {
  return (
    <div className="table-wrap">
      <table className="table dag-runs-table">
        <caption className="visually-hidden">Runs</caption>
        <thead>
          <tr>
            <th scope="col">State</th>
            <th scope="col">Run</th>
            <th scope="col">Steps</th>
            <th scope="col">Started</th>
            <th scope="col" className="num">
              Duration
            </th>
            <th scope="col" className="num">
              Version
            </th>
            <th scope="col">Parameters</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr key={r.id} data-run-id={r.id} data-state={r.state}>
              <td>
                <StateBadge state={r.state} />
              </td>
              <td>
                <Link to={dagRunPath(r.id)} className="run-link">
                  <code>{r.id}</code>
                </Link>
                {r.scheduleId && <span className="muted"> · scheduled</span>}
              </td>
              <td data-testid="run-step-counts">
                <StepCountsText counts={r.counts} />
              </td>
              <td>
                <TimeText iso={r.createdAt} />
              </td>
              <td className="num">
                <DurationText startedAt={r.createdAt} endedAt={r.endedAt} durationMs={null} />
              </td>
              <td className="num">{r.version}</td>
              <td className="run-params">
                {Object.keys(r.params).length === 0 ? (
                  <span className="muted">—</span>
                ) : (
                  Object.entries(r.params)
                    .map(([k, v]) => `${k}=${v}`)
                    .join(' ')
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
