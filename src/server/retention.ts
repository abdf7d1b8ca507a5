/**
 * What the store keeps for the dashboard, and for how long. The elected
 * sweeper (scheduler.ts) prunes at most every PRUNE_EVERY_MS, in bounded
 * batches, so a backlog (a server that was down) is worked off over several
 * sweeps without holding the database for long:
 *   changes (the stream's feed)     FEED_RETENTION_MS: a stream that was away
 *                                   longer gets `reset` and re-reads;
 *   per-minute activity             MINUTE_STATS_RETENTION_MS (the Overview
 *                                   shows at most 24 h);
 *   web sessions and sign-in codes  once expired;
 *   schedules' run records          the newest SCHEDULE_RUNS_KEPT (1,000) per
 *                                   schedule (store/schedules.ts), trimmed when
 *                                   a schedule holds 100 more, RUNS_PRUNE_SCHEDULES
 *                                   schedules of at most RUNS_PRUNE_PER_SCHEDULE
 *                                   records per transaction.
 */
import type { Store } from '../store/store.js';

export const FEED_RETENTION_MS = 15 * 60_000;
export const MINUTE_STATS_RETENTION_MS = 48 * 3600_000;
export const PRUNE_EVERY_MS = 10_000;
/** Changes one prune statement deletes at most; a sweep repeats it up to PRUNE_MAX_BATCHES times. */
export const PRUNE_BATCH = 2000;
const PRUNE_MAX_BATCHES = 8;
/**
 * Schedules trimmed per pruneScheduleRuns transaction, and records per
 * schedule. A schedule is trimmed when it holds 1,101 records, by 101 as a
 * rule, by up to 1,102 after a catch-up burst (1,000 runs and two skip
 * records at once): 1,200 takes either back to 1,000 in one go, so a
 * transaction deletes about 1,000 records as a rule and at most 12,000. A
 * sweep trims up to 80 schedules; 10,000 `* * * * *` schedules cross the
 * limit at about 17 per sweep (each once per 100 minutes).
 */
export const RUNS_PRUNE_SCHEDULES = 10;
export const RUNS_PRUNE_PER_SCHEDULE = 1200;

export interface Pruned {
  changes: number;
  minutes: number;
  sessions: number;
  /** Schedule run records deleted. */
  scheduleRuns: number;
}

export async function pruneExpired(store: Pick<Store, 'pruneFeed' | 'pruneMinuteStats' | 'pruneWebSessions' | 'pruneScheduleRuns'>, now: number): Promise<Pruned> {
  let changes = 0;
  for (let i = 0; i < PRUNE_MAX_BATCHES; i++) {
    const n = await store.pruneFeed(now - FEED_RETENTION_MS, PRUNE_BATCH);
    changes += n;
    if (n < PRUNE_BATCH) break;
  }
  const minutes = await store.pruneMinuteStats(now - MINUTE_STATS_RETENTION_MS);
  const sessions = await store.pruneWebSessions(now);
  let scheduleRuns = 0;
  for (let i = 0; i < PRUNE_MAX_BATCHES; i++) {
    const r = await store.pruneScheduleRuns(RUNS_PRUNE_SCHEDULES, RUNS_PRUNE_PER_SCHEDULE);
    scheduleRuns += r.deleted;
    if (r.schedules < RUNS_PRUNE_SCHEDULES) break;
  }
  return { changes, minutes, sessions, scheduleRuns };
}
