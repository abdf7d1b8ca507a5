/** WorkerStore on PostgreSQL (store/workers.ts is the contract). */
import { workerFromRow, type WorkerRow } from '../rows.js';
import type { WorkerRecord, WorkerStore } from '../workers.js';
import type { Db } from './db.js';

export function postgresWorkers(db: Db): WorkerStore {
  return {
    /**
     * One statement: the row lock of INSERT ... ON CONFLICT makes two hellos
     * with one id queue, and the WHERE (checked on the newest row) lets the
     * update through only for the token the id is bound to, a row bound to no
     * token (registered before tokens were bound), or a bound token that is no
     * longer live (revoked). RETURNING says whether the row was written. A
     * registration ends a drain (draining_at = NULL).
     */
    async registerWorker(w: Omit<WorkerRecord, 'state' | 'drainingAt'>, tokenId: string, draining = false): Promise<boolean> {
      return db.write(async (tx) => {
        // As the SQLite store: a hello that says draining keeps the drain (from its first time), any other ends it.
        const r = await tx.query(
          `INSERT INTO workers (id, hostname, slots, labels, connected_at, last_seen_at, state, token_id, draining_at)
           VALUES ($1, $2, $3, $4, $5, $6, 'connected', $7, $8)
           ON CONFLICT (id) DO UPDATE SET hostname = EXCLUDED.hostname, slots = EXCLUDED.slots, labels = EXCLUDED.labels,
             connected_at = EXCLUDED.connected_at, last_seen_at = EXCLUDED.last_seen_at, state = 'connected', token_id = EXCLUDED.token_id,
             draining_at = CASE WHEN EXCLUDED.draining_at IS NULL THEN NULL ELSE coalesce(workers.draining_at, EXCLUDED.draining_at) END
           WHERE workers.token_id IS NULL OR workers.token_id = EXCLUDED.token_id
             OR NOT EXISTS (SELECT 1 FROM tokens k WHERE k.id = workers.token_id AND k.revoked_at IS NULL)
           RETURNING id`,
          [w.id, w.hostname, w.slots, JSON.stringify(w.labels), w.connectedAt, w.lastSeenAt, tokenId, draining ? w.connectedAt : null],
        );
        return r.rowCount === 1;
      });
    },

    /** Autocommit: one statement, and an unknown outcome after a lost connection is harmless. */
    async touchWorker(id: string, now: number): Promise<void> {
      await db.single(async (q) => {
        await q.query('UPDATE workers SET last_seen_at = $1 WHERE id = $2', [now, id]);
      });
    },

    async markWorkerDisconnected(id: string, now: number): Promise<void> {
      await db.write(async (tx) => {
        await tx.query("UPDATE workers SET state = 'disconnected', last_seen_at = $1 WHERE id = $2", [now, id]);
      });
    },

    /**
     * One UPDATE records the drain (a second request keeps the first time) and
     * tells whether the worker exists; `drain` is NOTIFYed inside the same
     * transaction (db.ts), so it goes out if and only if the drain is recorded.
     */
    async requestDrain(workerId: string, reason: string, now: number): Promise<boolean> {
      return db.write(async (tx) => {
        const r = await tx.query('UPDATE workers SET draining_at = coalesce(draining_at, $2::bigint) WHERE id = $1 RETURNING id', [workerId, now]);
        if (r.rowCount === 0) return false;
        tx.signal({ kind: 'drain', workerId, reason });
        return true;
      });
    },

    async listWorkers(): Promise<WorkerRecord[]> {
      return db.read(async (q) => (await q.query<WorkerRow>('SELECT * FROM workers ORDER BY id')).rows.map(workerFromRow));
    },
  };
}
