/** LeadershipStore on PostgreSQL (store/leadership.ts is the contract). */
import type { LeadershipStore } from '../leadership.js';
import type { Db } from './db.js';
import { DB_NOW_MS } from './sql.js';

export function postgresLeadership(db: Db): LeadershipStore {
  return {
    /**
     * One statement in autocommit: the row lock of INSERT ... ON CONFLICT makes
     * contenders queue, and the WHERE, re-checked on the newest row, admits
     * one. The expiry is set and compared on the database's clock (sql.ts), so
     * a server whose clock runs ahead cannot take a lease that is still live,
     * nor one running behind keep an expired one: `now` is not used. A lost
     * connection leaves the outcome unknown; the holder's next call settles it.
     */
    async acquireLeadership(name: string, holder: string, _now: number, ttlMs: number): Promise<boolean> {
      return db.single(async (q) => {
        const r = await q.query(
          `INSERT INTO leaders (name, holder, expires_at) VALUES ($1, $2, ${DB_NOW_MS} + $3::bigint)
           ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
           WHERE leaders.holder = EXCLUDED.holder OR leaders.expires_at < ${DB_NOW_MS}
           RETURNING holder`,
          [name, holder, ttlMs],
        );
        return r.rowCount === 1;
      });
    },
  };
}
