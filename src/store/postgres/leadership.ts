/** LeadershipStore on PostgreSQL (store/leadership.ts is the contract). */
import type { LeadershipStore } from '../leadership.js';
import type { Db } from './db.js';
import { DB_NOW_MS } from './sql.js';

/**
 * $1 name, $2 holder, $3 ttl ms. The database's clock is read once
 * (EXCLUDED.expires_at - $3 is that reading), so the WHERE and the epoch's
 * CASE agree on whether the lease had expired. The epoch stays only for a
 * renewal of a live lease (same holder, not expired); any other take moves it.
 */
export const ACQUIRE_SQL = `INSERT INTO leaders (name, holder, expires_at, epoch) VALUES ($1, $2, ${DB_NOW_MS} + $3::bigint, 1)
 ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at,
   epoch = CASE WHEN leaders.holder = EXCLUDED.holder AND leaders.expires_at >= EXCLUDED.expires_at - $3::bigint
                THEN leaders.epoch ELSE leaders.epoch + 1 END
 WHERE leaders.holder = EXCLUDED.holder OR leaders.expires_at < EXCLUDED.expires_at - $3::bigint
 RETURNING epoch`;

export function postgresLeadership(db: Db): LeadershipStore {
  /**
   * One statement in autocommit: the row lock of INSERT ... ON CONFLICT makes
   * contenders queue, and the WHERE, re-checked on the newest row, admits
   * one. The expiry is set and compared on the database's clock (sql.ts), so
   * a server whose clock runs ahead cannot take a lease that is still live,
   * and `now` is ignored. A fireSchedule holding the row FOR SHARE makes a
   * takeover wait until that firing has committed.
   */
  const acquireLeadershipEpoch = async (name: string, holder: string, _now: number, ttlMs: number): Promise<number | null> =>
    db.single(async (q) => {
      const r = await q.query<{ epoch: number }>(ACQUIRE_SQL, [name, holder, ttlMs]);
      return r.rows[0]?.epoch ?? null;
    });
  return {
    acquireLeadershipEpoch,
    async acquireLeadership(name: string, holder: string, now: number, ttlMs: number): Promise<boolean> {
      return (await acquireLeadershipEpoch(name, holder, now, ttlMs)) !== null;
    },
  };
}
