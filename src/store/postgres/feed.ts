/**
 * The change feed on PostgreSQL (store/feed.ts has the cursor contract). The
 * triggers of migration 4 write the rows in the writing transaction; a change
 * is ordered by (xid, id): its top-level transaction's xid8, then its id.
 *
 * Why a read is safe. Every transaction that writes a change later gets an
 * xid no smaller than the xmin of any snapshot taken now, and every
 * transaction with an xid below that xmin has finished. So the changes with
 * xid < xmin, read in (xid, id) order, are a prefix that can no longer grow in
 * the middle: a reader that resumes after the last one it got misses nothing
 * and sees nothing twice, however the writers' commits interleave. A
 * transaction still running holds the horizon back (the feed waits for it;
 * any transaction in the cluster counts, another database's too).
 *
 * Cursor: "<xid>.<id>" in decimal, compared as the pair. The head is
 * "<xmin>.0": below every change not yet readable.
 */
import { CursorExpiredError, InvalidInputError } from '../../core/errors.js';
import type { TaskState } from '../../core/task-state.js';
import type { ChangePage, ChangeTopic, FeedStore } from '../feed.js';
import type { Db } from './db.js';
import { checkLimit } from './sql.js';

const CURSOR_RE = /^(0|[1-9][0-9]{0,19})\.(0|[1-9][0-9]{0,15})$/;
const XID8_MAX = 2n ** 64n - 1n;

/** [xid as decimal text, id]; InvalidInputError naming `cursor` for anything else. */
export function parsePostgresCursor(cursor: string): [string, number] {
  const m = typeof cursor === 'string' ? CURSOR_RE.exec(cursor) : null;
  if (!m || BigInt(m[1]!) > XID8_MAX || !Number.isSafeInteger(Number(m[2]))) {
    throw new InvalidInputError('cursor', 'is not a change-feed cursor of this store (<transaction>.<position>)');
  }
  return [m[1]!, Number(m[2])];
}

/**
 * The feed queries, exported for the query-plan tests. `read`: in one
 * statement (one snapshot) the horizon, whether the cursor is expired (before
 * the pruned position, or beyond every transaction this cluster has given out:
 * not a cursor of this database), and at most $3 changes after it below the
 * horizon; the changes read the primary key (xid, id), or (owner, xid, id).
 */
export const FEED_SQL = {
  head: 'SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin',
  read: (owner: boolean) => `SELECT h.horizon::text AS horizon,
       ($1::xid8, $2::bigint) < (m.pruned_xid, m.pruned_id) OR $1::xid8 > h.xmax AS expired,
       c.xid::text AS x, c.id, c.topic, c.ref, c.owner, c.state, c.at
FROM (SELECT pg_snapshot_xmin(s) AS horizon, pg_snapshot_xmax(s) AS xmax FROM pg_current_snapshot() AS s) h
JOIN feed_meta m ON m.id = 1
LEFT JOIN LATERAL (
  SELECT xid, id, topic, ref, owner, state, at FROM changes
  WHERE ${owner ? 'owner = $4 AND ' : ''}(xid, id) > ($1::xid8, $2::bigint) AND xid < h.horizon
  ORDER BY xid, id
  LIMIT $3
) c ON true
ORDER BY c.xid, c.id`,
  // The text of the xid is named x: `ORDER BY xid` must sort the xid8, not its text.
  prunable: 'SELECT xid::text AS x, id, at FROM changes WHERE xid < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY xid, id LIMIT $1',
};

interface ReadRow {
  horizon: string;
  expired: boolean;
  x: string | null;
  id: number | null;
  topic: ChangeTopic;
  ref: string;
  owner: string | null;
  state: TaskState | null;
  at: number;
}

export function postgresFeed(db: Db): FeedStore {
  return {
    async feedHead(): Promise<string> {
      return db.read(async (q) => `${(await q.query<{ xmin: string }>(FEED_SQL.head)).rows[0]!.xmin}.0`);
    },

    /**
     * A full page ends at its last change; a shorter one has read everything
     * below the horizon, so its cursor is "<horizon>.0" (never behind `after`):
     * an owner's reader keeps up with the feed, and with pruning, while
     * others' changes pass by.
     */
    async readChanges(after: string, limit: number, owner?: string): Promise<ChangePage> {
      const [xid, id] = parsePostgresCursor(after);
      checkLimit('limit', limit);
      const params: unknown[] = [xid, id, limit];
      if (owner !== undefined) params.push(owner);
      const rows = await db.read(async (q) => (await q.query<ReadRow>(FEED_SQL.read(owner !== undefined), params)).rows);
      const first = rows[0]!;
      if (first.expired) throw new CursorExpiredError(after);
      const changes = rows
        .filter((r) => r.x !== null)
        .map((r) => ({ cursor: `${r.x}.${r.id}`, topic: r.topic, ref: r.ref, owner: r.owner, state: r.state, at: r.at }));
      if (changes.length === limit) return { changes, cursor: changes[changes.length - 1]!.cursor };
      // "<horizon>.0" is past `after` unless `after` is already at or beyond the horizon's xid
      // (only a made-up cursor can be, short of the xmax check): never move a cursor back.
      return { changes, cursor: BigInt(first.horizon) > BigInt(xid) ? `${first.horizon}.0` : after };
    },

    /**
     * Deletes the oldest changes (below the horizon) while they are older
     * than `before`, at most `limit`: always a prefix in cursor order, whose
     * end is recorded in feed_meta in the same transaction, so a reader sees
     * either both or neither.
     */
    async pruneFeed(before: number, limit: number): Promise<number> {
      checkLimit('limit', limit);
      return db.write(async (tx) => {
        const rows = (await tx.query<{ x: string; id: number; at: number }>(FEED_SQL.prunable, [limit])).rows;
        let end: { x: string; id: number } | null = null;
        for (const r of rows) {
          if (!(r.at < before)) break;
          end = r;
        }
        if (end === null) return 0;
        const n = (await tx.query('DELETE FROM changes WHERE (xid, id) <= ($1::xid8, $2::bigint)', [end.x, end.id])).rowCount ?? 0;
        await tx.query('UPDATE feed_meta SET pruned_xid = $1::xid8, pruned_id = $2 WHERE id = 1 AND (pruned_xid, pruned_id) < ($1::xid8, $2::bigint)', [end.x, end.id]);
        return n;
      });
    },
  };
}
