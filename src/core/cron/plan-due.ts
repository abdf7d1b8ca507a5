/**
 * Which slots (scheduled fire times) to fire now: a pure function of
 * (schedule, last fired slot, creation time, now, catch-up policy).
 *
 * Due slots are the fire times in (lastSlot, now], or (createdAt, now] for a
 * schedule that never fired. They split in two:
 *   on time  now - slot <= DUE_GRACE_MS: the server was up and merely late
 *            (busy, a GC pause, the timer's own delay). Not a miss: every
 *            policy fires these, oldest first.
 *   missed   older than that: the server was down, the schedule paused, or a
 *            failover took longer than the grace. The policy decides:
 *     none    skip all of them;
 *     latest  fire the most recent missed slot once, unless an on-time slot
 *             fires now anyway (it is more recent, so it is the "latest");
 *     all     fire the most recent `maxCatchup` missed slots, oldest first;
 *             when more were missed, the older ones are dropped (`capped`,
 *             with `skipped.count` of them). The newest are kept because they
 *             are closest to what the user would have had, and `all` with
 *             maxCatchup 1 then equals `latest`.
 * A clock that reads earlier than the last slot (jumped backwards) fires
 * nothing: slots are only ever taken after lastSlot, so nothing re-runs.
 *
 * Bounded work for any outage: the fired slots are found backwards from now
 * (next-fire.ts latestFireBefore) and the skipped ones are counted forward
 * only up to SKIP_COUNT_LIMIT, after which the count is a lower bound
 * (`exact: false`). A per-second schedule down for years costs a few
 * thousand computations, not millions.
 */
import { InvalidInputError } from '../errors.js';
import { firstFireAfter, latestFireBefore } from './next-fire.js';
import type { Schedule } from './schedule.js';

export const CATCHUP_POLICIES = ['none', 'latest', 'all'] as const;
export type CatchupPolicy = (typeof CATCHUP_POLICIES)[number];

/** How late a slot may fire and still count as on time (not missed): 5 s, five times the 1 s accuracy target. */
export const DUE_GRACE_MS = 5_000;
export const DEFAULT_MAX_CATCHUP = 10;
/** Hard cap of --max-catchup: bounds one catch-up burst of tasks and the work to find them. */
export const MAX_CATCHUP_CAP = 1000;
/** Skipped slots counted one by one up to this many; beyond it the count is a lower bound. */
export const SKIP_COUNT_LIMIT = 2000;

export function parseCatchupPolicy(value: unknown): CatchupPolicy {
  if (typeof value === 'string' && (CATCHUP_POLICIES as readonly string[]).includes(value)) return value as CatchupPolicy;
  throw new InvalidInputError('catchup', `expected one of ${CATCHUP_POLICIES.join(', ')}`);
}

export function validateMaxCatchup(value: unknown): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_CATCHUP_CAP) return value;
  throw new InvalidInputError('maxCatchup', `expected an integer 1-${MAX_CATCHUP_CAP}`);
}

export interface DueInput {
  schedule: Schedule;
  /** The last slot fired (or recorded as skipped), null when none ever was. */
  lastSlotMs: number | null;
  createdAtMs: number;
  nowMs: number;
  catchup: CatchupPolicy;
  maxCatchup?: number;
}

export interface SkippedSlots {
  count: number;
  /** False when counting stopped at SKIP_COUNT_LIMIT: `count` is then a lower bound. */
  exact: boolean;
  firstMs: number | null;
  lastMs: number | null;
}

export interface DuePlan {
  /** Slots to fire now, ascending; each becomes one task keyed by (schedule, slot). */
  fire: number[];
  /** Due slots not fired (missed and dropped by the policy or the cap). */
  skipped: SkippedSlots;
  /** True only under `all` when more slots were missed than maxCatchup. */
  capped: boolean;
  /**
   * The next slot that may fire: the first fire time after max(now, lastSlot),
   * so after a backwards clock jump it is still after the last fired slot.
   * Null if the schedule has no more fire times.
   */
  nextAfterMs: number | null;
  /**
   * The slot the schedule advances to (store it as the new lastSlot): the
   * newest due slot, fired or skipped; unchanged when nothing was due.
   */
  lastSlotMs: number | null;
}

const NO_SKIP: SkippedSlots = Object.freeze({ count: 0, exact: true, firstMs: null, lastMs: null });

export function planDue(input: DueInput): DuePlan {
  const { schedule, lastSlotMs, createdAtMs, nowMs, catchup } = input;
  const maxCatchup = validateMaxCatchup(input.maxCatchup ?? DEFAULT_MAX_CATCHUP);
  const from = lastSlotMs ?? createdAtMs;
  const nextAfterMs = firstFireAfter(schedule, Math.max(nowMs, from));
  if (nowMs <= from) return { fire: [], skipped: NO_SKIP, capped: false, nextAfterMs, lastSlotMs };

  // On time: (max(from, now - grace - 1), now]; at most grace/1 s + 1 slots.
  const onTime: number[] = [];
  const missedEnd = nowMs - DUE_GRACE_MS - 1; // missed slots are in (from, missedEnd]
  for (let t: number | null = Math.max(from, missedEnd); (t = firstFireAfter(schedule, t)) !== null && t <= nowMs; ) onTime.push(t);

  const keep = catchup === 'none' ? 0 : catchup === 'latest' ? (onTime.length > 0 ? 0 : 1) : maxCatchup;
  const recent: number[] = [];
  let before = missedEnd + 1;
  while (recent.length < keep) {
    const s = latestFireBefore(schedule, before, from);
    if (s === null) break;
    recent.unshift(s);
    before = s;
  }
  const skipped = countSlots(schedule, from, before);
  const fire = [...recent, ...onTime];
  const newest = fire.length > 0 ? fire[fire.length - 1]! : skipped.lastMs;
  return { fire, skipped, capped: catchup === 'all' && skipped.count > 0, nextAfterMs, lastSlotMs: newest ?? lastSlotMs };
}

/** Fire times in (from, before): counted up to SKIP_COUNT_LIMIT, first and last always exact. */
function countSlots(schedule: Schedule, from: number, before: number): SkippedSlots {
  const firstMs = firstFireAfter(schedule, from);
  if (firstMs === null || firstMs >= before) return NO_SKIP;
  let count = 1;
  let t = firstMs;
  while (count < SKIP_COUNT_LIMIT) {
    const n = firstFireAfter(schedule, t);
    if (n === null || n >= before) return { count, exact: true, firstMs, lastMs: t };
    t = n;
    count++;
  }
  const next = firstFireAfter(schedule, t);
  if (next === null || next >= before) return { count, exact: true, firstMs, lastMs: t };
  return { count: count + 1, exact: false, firstMs, lastMs: latestFireBefore(schedule, before, t) };
}

/** How late a slot's task was created (negative: created before its slot, i.e. clocks disagree). */
export function lateness(slotMs: number, createdMs: number): number {
  return createdMs - slotMs;
}
