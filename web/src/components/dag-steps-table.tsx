/** A DAG version's steps as text: name, what it depends on, its condition, what it runs. The graph's accessible companion. */
import type { DagStep } from '../api/types';
import { conditionShort } from '../dag/step-text';

function runsText(s: DagStep): string {
  const t = s.task;
  if (t.script !== null) return t.script.split('\n').find((l) => l.trim() !== '' && !l.startsWith('#!')) ?? t.script;
  return [t.command ?? '', ...t.args].join(' ');
}

export function DagStepsTable({ steps }: { steps: DagStep[] }) {
  return (
    <div className="table-wrap">
      <table className="table dag-steps-table">
        <caption className="visually-hidden">Steps</caption>
        <thead>
          <tr>
            <th scope="col">Step</th>
            <th scope="col">Depends on</th>
            <th scope="col">Runs when</th>
            <th scope="col">Runs</th>
          </tr>
        </thead>
        <tbody>
          {steps.map((s) => (
            <tr key={s.name} data-step={s.name}>
              <td>{s.name}</td>
              <td>{s.dependsOn.length === 0 ? <span className="muted">—</span> : s.dependsOn.join(', ')}</td>
              <td className={s.when === 'success' ? 'muted' : undefined}>{conditionShort(s.when)}</td>
              <td>
                <code className="dag-step-runs">{runsText(s)}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
