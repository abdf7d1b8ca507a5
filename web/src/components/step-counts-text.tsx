/** A run's steps by state in a few characters (✓ 3 · ✕ 1 · ↷ 1): glyphs with numbers, the states in words for assistive tech. */
import { TASK_STATES, type TaskState } from '../api/types';
import { stateGlyph } from '../dag/state-glyphs';

export function StepCountsText({ counts }: { counts: Partial<Record<TaskState, number>> }) {
  const shown = TASK_STATES.filter((s) => (counts[s] ?? 0) > 0);
  if (shown.length === 0) return <span className="muted">—</span>;
  return (
    <span className="step-counts" aria-label={shown.map((s) => `${counts[s]} ${s}`).join(', ')}>
      {shown.map((s) => (
        <span key={s} className={`step-count step-count-${s}`} aria-hidden="true" title={s}>
          {stateGlyph(s)} {counts[s]}
        </span>
      ))}
    </span>
  );
}
