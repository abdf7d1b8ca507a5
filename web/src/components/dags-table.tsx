/** DAG definitions (their newest versions): name (a link to the DAG's page), version, steps, description, when last changed. */
import { Link } from 'react-router';
import type { DagSummary } from '../api/types';
import { dagPath } from '../dag/dag-links';
import { TimeText } from './time-text';

export function DagsTable({ dags, me, showOwner }: { dags: DagSummary[]; me: string; showOwner: boolean }) {
  return (
    <div className="table-wrap">
      <table className="table dags-table">
        <caption className="visually-hidden">DAGs</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            {showOwner && <th scope="col">Owner</th>}
            <th scope="col" className="num">
              Version
            </th>
            <th scope="col" className="num">
              Steps
            </th>
            <th scope="col">Description</th>
            <th scope="col">Updated</th>
          </tr>
        </thead>
        <tbody>
          {dags.map((d) => (
            <tr key={d.id} data-dag={d.name}>
              <td>
                <Link to={dagPath(d.name, d.owner, me)} className="dag-link">
                  {d.name}
                </Link>
              </td>
              {showOwner && <td>{d.owner}</td>}
              <td className="num">{d.version}</td>
              <td className="num">{d.stepCount}</td>
              <td className="dag-description">{d.description ?? <span className="muted">—</span>}</td>
              <td>
                <TimeText iso={d.updatedAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
