/** Tasks by state: one tile per state (name, count, colour), each a link to the filtered Tasks page. */
import { Link } from 'react-router';
import { TASK_STATES, type CountsAnswer } from '../api/types';

const nf = new Intl.NumberFormat();

export function CountsGrid({ counts }: { counts: CountsAnswer | undefined }) {
  return (
    <ul className="counts" aria-label="Tasks by state" aria-busy={counts === undefined}>
      {TASK_STATES.map((s) => (
        <li key={s}>
          <Link to={`/tasks?state=${s}`} className={`count-tile count-${s}`} data-state={s}>
            <span className="count-label">
              <span className={`badge-icon state-icon-${s}`} aria-hidden="true" />
              {s}
            </span>
            <span className="count-value" data-testid={`count-${s}`}>
              {counts ? nf.format(counts.counts[s] ?? 0) : '–'}
            </span>
          </Link>
        </li>
      ))}
      <li>
        <Link to="/tasks" className="count-tile count-total">
          <span className="count-label">all tasks</span>
          <span className="count-value" data-testid="count-total">
            {counts ? nf.format(counts.total) : '–'}
          </span>
        </Link>
      </li>
    </ul>
  );
}
