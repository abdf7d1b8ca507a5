/**
 * The change feed on SQLite (store/feed.ts). The triggers of migration 4 write
 * the rows; one writer at a time, so the AUTOINCREMENT id is commit order and
 * the cursor is the id in decimal. The head is the highest id ever given out
 * (sqlite_sequence, which outlives pruned rows), and a read never returns a
 * row above the head it read, so a read is consistent even without a
 * transaction (every id up to a committed sequence value is committed).
 */
import { CursorExpiredError, InvalidInputError } from '../../core/errors.js';
import type { TaskState } from '../../core/task-state.js';
import type { ChangePage, ChangeTopic, FeedStore } from '../feed.js';
import type { SqliteDb } from './db.js';
import { checkLimit } from './records.js';

const CURSOR_RE = /^(0|[1-9][0-9]{0,15})$/;

export function parseSqliteCursor(cursor: string): number {
  const n = typeof cursor === 'string' && CURSOR_RE.test(cursor) ? Number(cursor) : NaN;
  if (!Number.isSafeInteger(n)) throw new InvalidInputError('cursor', 'is not a change-feed cursor of this store (a decimal position)');
  return n;
}

/** The feed queries, exported for the query-plan tests. */
export const FEED_SQL = {
  head: "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'changes'), 0) AS head, pruned_id FROM feed_meta WHERE id = 1",
  all: 'SELECT id, topic, ref, owner, state, at FROM changes WHERE id > ? AND id <= ? ORDER BY id LIMIT +?',
  owner: 'SELECT id, topic, ref, owner, state, at FROM changes WHERE owner = ? AND id > ? AND id <= ? ORDER BY id LIMIT +?',
  prunable: 'SELECT id, at FROM changes ORDER BY id LIMIT +?',
};

interface ChangeRow {
  id: number;
  topic: ChangeTopic;
  ref: string;
  owner: string | null;
  state: TaskState | null;
  at: number;
}

export function sqliteFeed(d: SqliteDb): FeedStore {
  const head = () => d.q(FEED_SQL.head).get() as { head: number; pruned_id: number };
  return {
    async feedHead(): Promise<string> {
      return d.read(() => String(head().head));
    },

    /**
     * A full page ends at its last change; a shorter one has read everything
     * up to the head, so its cursor is the head (an owner's reader keeps up
     * with the feed, and with pruning, while others' changes pass by).
     * A cursor before the pruned position, or beyond the head (not from this
     * database), is expired: the reader re-reads and starts from the head.
     */
    async readChanges(after: string, limit: number, owner?: string): Promise<ChangePage> {
      const from = parseSqliteCursor(after);
      checkLimit(limit);
      return d.read(() => {
        const h = head();
        if (from < h.pruned_id || from > h.head) throw new CursorExpiredError(after);
        const rows = (owner === undefined ? d.q(FEED_SQL.all).all(from, h.head, limit) : d.q(FEED_SQL.owner).all(owner, from, h.head, limit)) as ChangeRow[];
        const changes = rows.map((r) => ({ cursor: String(r.id), topic: r.topic, ref: r.ref, owner: r.owner, state: r.state, at: r.at }));
        return { changes, cursor: rows.length === limit ? changes[changes.length - 1]!.cursor : String(h.head) };
      });
    },

    /**
     * Deletes the oldest changes while they are older than `before`, at most
     * `limit`: always a prefix in cursor order (a reader is never left with a
     * hole it cannot see), and its end is recorded in feed_meta in the same
     * transaction.
     */
    async pruneFeed(before: number, limit: number): Promise<number> {
      checkLimit(limit);
      return d.write(() => {
        const rows = d.q(FEED_SQL.prunable).all(limit) as Array<{ id: number; at: number }>;
        let end = -1;
        for (const r of rows) {
          if (!(r.at < before)) break;
          end = r.id;
        }
        if (end < 0) return 0;
        const n = d.q('DELETE FROM changes WHERE id <= ?').run(end).changes;
        d.q('UPDATE feed_meta SET pruned_id = max(pruned_id, ?) WHERE id = 1').run(end);
        return n;
      });
    },
  };
}
