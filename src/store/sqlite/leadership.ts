/** Leadership leases on SQLite (store/leadership.ts); the caller's clock (one server per file). */
import type { LeadershipStore } from '../leadership.js';
import type { SqliteDb } from './db.js';

export function sqliteLeadership(d: SqliteDb): LeadershipStore {
  return {
    /** Taken or renewed in one statement whose WHERE makes it exclusive: free, expired, or already this holder's. */
    async acquireLeadership(name: string, holder: string, now: number, ttlMs: number): Promise<boolean> {
      return d.write(() => {
        const row = d
          .q(
            `INSERT INTO leaders (name, holder, expires_at) VALUES (@name, @holder, @expires)
             ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
             WHERE leaders.holder = excluded.holder OR leaders.expires_at < @now
             RETURNING holder`,
          )
          .get({ name, holder, expires: now + ttlMs, now });
        return row !== undefined;
      });
    },
  };
}
