/**
 * What the store keeps for the dashboard, and for how long. The elected
 * sweeper (scheduler.ts) prunes at most every PRUNE_EVERY_MS, in bounded
 * batches, so a backlog (a server that was down) is worked off over several
 * sweeps without holding the database for long:
 *   changes (the stream's feed)     FEED_RETENTION_MS: a stream that was away
 *                                   longer gets `reset` and re-reads;
 *   per-minute activity             MINUTE_STATS_RETENTION_MS (the Overview
 *                                   shows at most 24 h);
 *   web sessions and sign-in codes  once expired.
 */
import type { Store } from '../store/store.js';

export const FEED_RETENTION_MS = 15 * 60_000;
export const MINUTE_STATS_RETENTION_MS = 48 * 3600_000;
export const PRUNE_EVERY_MS = 10_000;
/** Changes one prune statement deletes at most; a sweep repeats it up to PRUNE_MAX_BATCHES times. */
export const PRUNE_BATCH = 2000;
const PRUNE_MAX_BATCHES = 8;

export interface Pruned {
  changes: number;
  minutes: number;
  sessions: number;
}

export async function pruneExpired(store: Pick<Store, 'pruneFeed' | 'pruneMinuteStats' | 'pruneWebSessions'>, now: number): Promise<Pruned> {
  let changes = 0;
  for (let i = 0; i < PRUNE_MAX_BATCHES; i++) {
    const n = await store.pruneFeed(now - FEED_RETENTION_MS, PRUNE_BATCH);
    changes += n;
    if (n < PRUNE_BATCH) break;
  }
  const minutes = await store.pruneMinuteStats(now - MINUTE_STATS_RETENTION_MS);
  const sessions = await store.pruneWebSessions(now);
  return { changes, minutes, sessions };
}
