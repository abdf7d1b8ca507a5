/** Workers on SQLite (store/workers.ts): a worker id is bound to the token that registered it. */
import { workerFromRow, type WorkerRow } from '../rows.js';
import type { WorkerRecord, WorkerStore } from '../workers.js';
import type { SqliteDb } from './db.js';

export function sqliteWorkers(d: SqliteDb): WorkerStore {
  return {
    /**
     * One upsert: a new id is inserted bound to `tokenId`; an existing row
     * changes only if it is bound to this token, to none (registered before
     * tokens were recorded), or to no live token (revoked). RETURNING yields no
     * row when the WHERE refused the update. A registration ends a drain
     * (draining_at = NULL): the worker that says hello again takes work;
     * unless it says it is draining (a drained agent that moved to another
     * server), when the drain stays, from its first time.
     */
    async registerWorker(w: Omit<WorkerRecord, 'state' | 'drainingAt'>, tokenId: string, draining = false): Promise<boolean> {
      return d.write(() => {
        const row = d
          .q(
            `INSERT INTO workers (id, hostname, slots, labels, connected_at, last_seen_at, state, token_id, draining_at)
             VALUES (@id, @hostname, @slots, @labels, @connectedAt, @lastSeenAt, 'connected', @tokenId, @drainingAt)
             ON CONFLICT (id) DO UPDATE SET hostname = excluded.hostname, slots = excluded.slots, labels = excluded.labels,
               connected_at = excluded.connected_at, last_seen_at = excluded.last_seen_at, state = 'connected', token_id = excluded.token_id,
               draining_at = CASE WHEN excluded.draining_at IS NULL THEN NULL ELSE coalesce(workers.draining_at, excluded.draining_at) END
             WHERE workers.token_id IS NULL OR workers.token_id = excluded.token_id
               OR NOT EXISTS (SELECT 1 FROM tokens t WHERE t.id = workers.token_id AND t.revoked_at IS NULL)
             RETURNING id`,
          )
          .get({
            id: w.id,
            hostname: w.hostname,
            slots: w.slots,
            labels: JSON.stringify(w.labels),
            connectedAt: w.connectedAt,
            lastSeenAt: w.lastSeenAt,
            tokenId,
            drainingAt: draining ? w.connectedAt : null,
          });
        return row !== undefined;
      });
    },

    async touchWorker(id: string, now: number): Promise<void> {
      await d.write(() => {
        d.q('UPDATE workers SET last_seen_at = ? WHERE id = ?').run(now, id);
      });
    },

    async markWorkerDisconnected(id: string, now: number): Promise<void> {
      await d.write(() => {
        d.q("UPDATE workers SET state = 'disconnected', last_seen_at = ? WHERE id = ?").run(now, id);
      });
    },

    /**
     * One UPDATE records the drain (a second request keeps the first time) and
     * tells whether the worker exists; the signal goes out after the commit.
     */
    async requestDrain(workerId: string, reason: string, now: number): Promise<boolean> {
      return d.write(() => {
        if (!d.q('UPDATE workers SET draining_at = coalesce(draining_at, ?) WHERE id = ? RETURNING id').get(now, workerId)) return false;
        d.signal({ kind: 'drain', workerId, reason });
        return true;
      });
    },

    async listWorkers(): Promise<WorkerRecord[]> {
      return d.read(() => (d.q('SELECT * FROM workers ORDER BY id').all() as WorkerRow[]).map(workerFromRow));
    },
  };
}
