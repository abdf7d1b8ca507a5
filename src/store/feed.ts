/**
 * The change feed: what the dashboard's live stream (server/change-feed.ts)
 * tails. Every insert or update of a task row, and every change of a worker
 * row other than a bare heartbeat (lastSeenAt), appends one change in the same
 * transaction (database triggers, so no write path can forget one).
 *
 * Cursor contract (the reason this is not "id > n"):
 * - A cursor is an opaque string. `readChanges(after)` returns changes in
 *   cursor order, and a change committed after a read returns a cursor GREATER
 *   than every cursor that read returned. So a reader that resumes from its
 *   last cursor misses nothing and sees nothing twice, across any number of
 *   writers and servers.
 * - SQLite: one writer at a time, so the AUTOINCREMENT id is commit order:
 *   the cursor is the id.
 * - PostgreSQL: ids (a sequence) are taken before commit and can commit out of
 *   order, so a change is ordered by (writing transaction's xid8, id), and a
 *   read returns only changes of transactions older than every transaction
 *   still running (xid < pg_snapshot_xmin(pg_current_snapshot())): no change
 *   can later appear before them. A long-running write transaction therefore
 *   delays the feed (never reorders it).
 * - Changes are kept for a retention period (pruneFeed). A cursor older than
 *   what was pruned throws CursorExpiredError: the reader must re-read its
 *   state and continue from feedHead().
 */
import type { TaskState } from '../core/task-state.js';

export type ChangeTopic = 'task' | 'worker';

export interface Change {
  /** Position of this change; pass as `after` to read what follows it. */
  cursor: string;
  topic: ChangeTopic;
  /** The task id or worker id. */
  ref: string;
  /** The task's owner (null for workers), so a user's feed is filtered in the store. */
  owner: string | null;
  /** The task's state after the change (null for workers). */
  state: TaskState | null;
  /** Epoch ms of the change (the row's updatedAt / the write's now). */
  at: number;
}

export interface ChangePage {
  changes: Change[];
  /**
   * Where the next read starts, never before `after`: the last change's
   * cursor when the page is full (`limit` changes); otherwise the read's
   * horizon, past every change returned (and every change of other owners it
   * passed), so a filtered reader keeps up with pruning while others write.
   */
  cursor: string;
}

export interface FeedStore {
  /** A cursor such that every change committed after this call is read after it. */
  feedHead(): Promise<string>;
  /**
   * At most `limit` changes after `after`, in cursor order; with `owner`, only
   * that owner's task changes (worker changes are excluded then). Throws
   * InvalidInputError('cursor', ...) for a malformed cursor and
   * CursorExpiredError for one older than the retained changes (or beyond
   * anything this store gave out: a cursor of another database).
   */
  readChanges(after: string, limit: number, owner?: string): Promise<ChangePage>;
  /** Deletes at most `limit` changes older than `before` (epoch ms), oldest first; returns how many. */
  pruneFeed(before: number, limit: number): Promise<number>;
}
