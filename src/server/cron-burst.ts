/**
 * One firing of one schedule, decided from the core's answers (pure): which
 * due slots get a task, which are recorded as skipped runs and why, and
 * whether the run that was active before this firing is cancelled first.
 *
 * Catch-up (core/cron/plan-due.ts planDue) drops missed slots; those are
 * recorded as skipped runs with the policy's reason (`catchup_none`,
 * `catchup_latest`, `catchup_capped`), but only the FIRST and LAST of them
 * (an outage of a per-second schedule drops thousands), each carrying
 * `catchup`: how many there were (a lower bound when `exact` is false). The
 * API and `drover cron show` report it from those records; the firing loop
 * also logs it.
 *
 * Overlap (core/cron/overlap.ts decideOverlap) is applied slot by slot, in
 * order, a slot's "previous run" being the active run before the firing for
 * the first slot and the slot fired just before it for the others (a task
 * just created is active: it has not even started). So in a catch-up burst:
 *   allow    every slot fires;
 *   forbid   with a run active, every slot is skipped (`overlap_forbid`);
 *            else the oldest fires and the rest are skipped (`overlap_forbid`);
 *   replace  the active run (if any) is cancelled and only the newest slot
 *            fires; the older ones of the burst are recorded as skipped
 *            (`overlap_replace`) rather than created and cancelled at once.
 */
import { decideOverlap, type OverlapPolicy } from '../core/cron/overlap.js';
import type { CatchupPolicy, DuePlan } from '../core/cron/plan-due.js';
import type { CatchupCount, SkipReason } from '../store/schedules.js';

export interface Burst {
  /** Slots to create a task for, ascending. */
  fire: number[];
  /** Skipped runs to record (bounded: see the header); a catch-up's two records carry its count. */
  skipped: Array<{ slot: number; reason: SkipReason; catchup?: CatchupCount }>;
  /** Cancel the run that was active before this firing (replace). */
  cancelPrevious: boolean;
  /** How many missed slots catch-up dropped (recorded or not). */
  catchup: { count: number; exact: boolean; reason: SkipReason | null };
}

const CATCHUP_REASON: Record<CatchupPolicy, SkipReason> = { none: 'catchup_none', latest: 'catchup_latest', all: 'catchup_capped' };

export function planBurst(plan: DuePlan, catchup: CatchupPolicy, overlap: OverlapPolicy, previousActive: boolean): Burst {
  const skipped: Burst['skipped'] = [];
  const { count, exact, firstMs, lastMs } = plan.skipped;
  const reason = count > 0 ? CATCHUP_REASON[catchup] : null;
  if (reason !== null) {
    const catchup = { count, exact };
    if (firstMs !== null) skipped.push({ slot: firstMs, reason, catchup });
    if (lastMs !== null && lastMs !== firstMs) skipped.push({ slot: lastMs, reason, catchup });
  }
  const fire: number[] = [];
  let active = previousActive;
  let cancelPrevious = false;
  for (const slot of plan.fire) {
    const d = decideOverlap(overlap, active);
    switch (d.action) {
      case 'start':
        fire.push(slot);
        break;
      case 'skip':
        skipped.push({ slot, reason: 'overlap_forbid' });
        break;
      case 'replace':
        if (fire.length === 0) cancelPrevious = true;
        else skipped.push({ slot: fire.pop()!, reason: 'overlap_replace' });
        fire.push(slot);
        break;
      default: {
        const never: never = d;
        throw new Error(`unknown overlap decision ${JSON.stringify(never)}`);
      }
    }
    active = true;
  }
  skipped.sort((a, b) => a.slot - b.slot);
  return { fire, skipped, cancelPrevious, catchup: { count, exact, reason } };
}
