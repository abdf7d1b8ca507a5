/**
 * What each run of a schedule is, in a line: a task schedule's command and
 * arguments (or its script's interpreter), or a DAG schedule's "DAG name"
 * linking to the DAG's page, with its parameters. The DAG is the schedule
 * owner's (`me` keeps the signed-in user's own links short, dag-links.ts).
 */
import { Link } from 'react-router';
import type { Schedule } from '../api/types';
import { dagPath } from '../dag/dag-links';

/** An argument as a shell would need it to stay one word: quoted when empty or holding spaces or quotes. */
const word = (a: string) => (a === '' || /[\s"'\\]/.test(a) ? JSON.stringify(a) : a);

export function ScheduleTarget({ schedule: s, me }: { schedule: Schedule; me: string }) {
  if (s.dag !== null) {
    const params = Object.entries(s.dag.params).map(([k, v]) => `${k}=${v}`);
    return (
      <span className="schedule-target" data-testid="schedule-target" data-target="dag">
        <span>
          DAG{' '}
          <Link to={dagPath(s.dag.name, s.owner, me)} className="schedule-dag-link" data-dag-link={s.dag.name}>
            {s.dag.name}
          </Link>
        </span>
        {params.length > 0 && (
          <code className="schedule-target-detail" title={params.join(' ')}>
            {params.join(' ')}
          </code>
        )}
      </span>
    );
  }
  const t = s.task;
  if (t === null) return <span className="muted">—</span>;
  const line = t.command !== null ? [t.command, ...t.args].map(word).join(' ') : null;
  return (
    <span className="schedule-target" data-testid="schedule-target" data-target="task">
      {line !== null ? (
        <code className="schedule-target-detail" title={line}>
          {line}
        </code>
      ) : (
        <>
          Script{t.interpreter.length > 0 && <code className="schedule-target-detail">{t.interpreter.join(' ')}</code>}
        </>
      )}
    </span>
  );
}
