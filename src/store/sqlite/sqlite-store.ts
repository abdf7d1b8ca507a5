/**
 * The embedded store: SQLite through better-sqlite3 (design.md: the datastore
 * is also the queue). This file only composes the concern files (tokens.ts,
 * tasks.ts, attempts.ts, logs.ts, workers.ts, leadership.ts, web-sessions.ts,
 * feed.ts, task-views.ts, schedules.ts, dags.ts) over one
 * connection (db.ts: open, group commit, signals; its header states the
 * concurrency model). One server per file: signals stay in this process, and
 * with `lock: true` a second server on the same file is refused.
 */
import type Database from 'better-sqlite3';
import type { Store, StoreCapabilities } from '../store.js';
import { sqliteAttempts } from './attempts.js';
import { sqliteDags } from './dags.js';
import { openSqliteDb, type OpenSqliteOptions } from './db.js';
import { sqliteFeed } from './feed.js';
import { sqliteLeadership } from './leadership.js';
import { sqliteLogs } from './logs.js';
import { migrate } from './migrations.js';
import { sqliteSchedules } from './schedules.js';
import { sqliteTasks } from './tasks.js';
import { sqliteTaskViews } from './task-views.js';
import { sqliteTokens } from './tokens.js';
import { sqliteWebSessions } from './web-sessions.js';
import { sqliteWorkers } from './workers.js';

export type { OpenSqliteOptions } from './db.js';

export type SqliteStore = Store & {
  /** The connection; exposed for diagnostics and tests, not for callers to write through. */
  readonly db: Database.Database;
};

const CAPABILITIES: StoreCapabilities = { multiServer: false, groupCommit: true, leaseClock: 'caller' };

/**
 * Opens (creating if needed, mode 0600 in a 0700 directory) the database at
 * `path`, or an in-memory one for ":memory:". Call `migrate()` before
 * anything else.
 */
export function openSqliteStore(path: string, opts: OpenSqliteOptions = {}): SqliteStore {
  const d = openSqliteDb(path, opts);
  return {
    db: d.db,
    capabilities: CAPABILITIES,
    ...sqliteTokens(d),
    ...sqliteTasks(d),
    ...sqliteAttempts(d),
    ...sqliteLogs(d),
    ...sqliteWorkers(d),
    ...sqliteLeadership(d),
    ...sqliteWebSessions(d),
    ...sqliteFeed(d),
    ...sqliteTaskViews(d),
    ...sqliteSchedules(d),
    ...sqliteDags(d),
    onSignal: (listener) => d.onSignal(listener),
    migrate: () => migrate(d),
    close: () => d.close(),
  };
}
