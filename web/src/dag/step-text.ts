/** Words for a DAG step's condition and skip reason (graph nodes, the task page, the timeline). */
import type { SkipReason, StepCondition } from '../api/types';

/** Shown on a node whose condition is not the default (the DAG file's own words); null for `success`. */
export function conditionLabel(when: StepCondition | string): string | null {
  if (when === 'success') return null;
  return `when: ${when}`;
}

/** The steps table's "Runs when" column. */
export function conditionShort(when: StepCondition | string): string {
  if (when === 'failure') return 'one failed (when: failure)';
  if (when === 'always') return 'all ended (when: always)';
  return 'all succeeded';
}

export function skipReasonText(reason: SkipReason | string | null): string {
  switch (reason) {
    case 'upstream_failed':
      return 'a step it depends on failed';
    case 'upstream_skipped':
      return 'a step it depends on was skipped';
    case 'condition_not_met':
      return 'its condition was not met (it runs only if a dependency failed)';
    case null:
      return '—';
    default:
      return reason;
  }
}

/** The timeline's few words for a step that never ran. */
export function skipReasonShort(reason: SkipReason | string | null): string {
  if (reason === 'upstream_failed') return 'skipped: upstream failed';
  if (reason === 'upstream_skipped') return 'skipped: upstream skipped';
  if (reason === 'condition_not_met') return 'skipped: condition not met';
  return 'skipped';
}
