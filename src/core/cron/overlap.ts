/**
 * What to do when a slot fires while the schedule's previous run may still
 * be going (issue 11, --overlap):
 *   allow    start the new run regardless;
 *   forbid   skip the slot while the previous run is active (the caller
 *            records a skipped run with the reason);
 *   replace  cancel the running one, then start the new one.
 * With no run active, every policy starts.
 */
import { InvalidInputError } from '../errors.js';

export const OVERLAP_POLICIES = ['allow', 'forbid', 'replace'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

export type OverlapDecision = { action: 'start' } | { action: 'skip'; reason: 'previous_run_active' } | { action: 'replace' };

export function parseOverlapPolicy(value: unknown): OverlapPolicy {
  if (typeof value === 'string' && (OVERLAP_POLICIES as readonly string[]).includes(value)) return value as OverlapPolicy;
  throw new InvalidInputError('overlap', `expected one of ${OVERLAP_POLICIES.join(', ')}`);
}

export function decideOverlap(policy: OverlapPolicy, previousRunning: boolean): OverlapDecision {
  if (!previousRunning) return { action: 'start' };
  switch (policy) {
    case 'allow':
      return { action: 'start' };
    case 'forbid':
      return { action: 'skip', reason: 'previous_run_active' };
    case 'replace':
      return { action: 'replace' };
    default:
      return assertNever(policy);
  }
}

function assertNever(x: never): never {
  throw new Error(`unknown overlap policy ${String(x)}`);
}
