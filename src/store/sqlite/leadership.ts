/** Leadership leases on SQLite (store/leadership.ts); the caller's clock (one server per file). */
import type { LeadershipStore } from '../leadership.js';
import type { SqliteDb } from './db.js';

/**
 * Taken or renewed in one statement whose WHERE makes it exclusive: free,
 * expired, or already this holder's. The epoch stays only for a renewal of a
 * live lease (same holder, not expired); any other take moves it.
 */
export const ACQUIRE_SQL = `INSERT INTO leaders (name, holder, expires_at, epoch) VALUES (@name, @holder, @expires, 1)
 ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at,
   epoch = CASE WHEN leaders.holder = excluded.holder AND leaders.expires_at >= @now THEN leaders.epoch ELSE leaders.epoch + 1 END
 WHERE leaders.holder = excluded.holder OR leaders.expires_at < @now
 RETURNING epoch`;

export function sqliteLeadership(d: SqliteDb): LeadershipStore {
  const acquireLeadershipEpoch = async (name: string, holder: string, now: number, ttlMs: number): Promise<number | null> =>
    d.write(() => {
      const row = d.q(ACQUIRE_SQL).get({ name, holder, expires: now + ttlMs, now }) as { epoch: number } | undefined;
      return row === undefined ? null : row.epoch;
    });
  return {
    acquireLeadershipEpoch,
    async acquireLeadership(name: string, holder: string, now: number, ttlMs: number): Promise<boolean> {
      return (await acquireLeadershipEpoch(name, holder, now, ttlMs)) !== null;
    },
  };
}
