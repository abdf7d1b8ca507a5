/** A run's steps by state: a badge (colour, glyph, name) and the number, in the task states' order; states with none are left out. */
import { TASK_STATES, type DagRunDetail } from '../api/types';
import { StateBadge } from './state-badge';

const nf = new Intl.NumberFormat();

export function DagRunCounts({ counts, total }: { counts: DagRunDetail['counts']; total: number }) {
  const shown = TASK_STATES.filter((s) => (counts[s] ?? 0) > 0);
  return (
    <ul className="run-counts" aria-label="Steps by state">
      {shown.map((s) => (
        <li key={s} data-testid={`run-count-${s}`} data-count={counts[s]}>
          <StateBadge state={s} />
          <span className="run-count-value">{nf.format(counts[s] ?? 0)}</span>
        </li>
      ))}
      <li className="muted">of {nf.format(total)} step{total === 1 ? '' : 's'}</li>
    </ul>
  );
}
