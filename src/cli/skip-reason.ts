/** Why a DAG step was skipped (core/dag/release.ts SkipReason), as `drover show` and `drover dag status` say it. */
import type { SkipReason } from '../client/dag-types.js';

export function describeSkipReason(r: SkipReason): string {
  switch (r) {
    case 'upstream_failed':
      return 'upstream_failed: a step it depends on failed or was cancelled';
    case 'upstream_skipped':
      return 'upstream_skipped: a step it depends on was skipped';
    case 'condition_not_met':
      return 'condition_not_met: it runs on failure (when: failure) and no step it depends on failed';
    default:
      return String(r);
  }
}
