/**
 * One SQLite file serves one server: its signals (wake, cancel, drain) are
 * emitted in-process, so a second server on the same file would never hear
 * the first's changes. A server therefore holds a kernel lock on
 * `<path>.lock` while the store is open and refuses to start when another
 * process holds it.
 *
 * The lock is itself a small SQLite database opened with
 * `locking_mode=EXCLUSIVE`: after its first write the connection keeps the
 * exclusive lock until it closes, and the kernel drops it when the process
 * dies (kill -9 included), so a crashed server never leaves a stale lock.
 * SQLite's own locking is used rather than a pid file because it is the same
 * mechanism the database relies on, works on every platform SQLite does, and
 * needs no cleanup. The lock file is kept, not deleted, on close: deleting
 * it could let two servers lock two different files of one name.
 */
import Database from 'better-sqlite3';
import { ConflictError } from '../../core/errors.js';
import { createPrivateFile } from './files.js';

export interface ServerLock {
  release(): void;
}

/** The error a second server gets; the operator's way out is PostgreSQL. */
export function serverLockedMessage(path: string): string {
  return `another Drover server is using ${path}; one SQLite file serves one server: to run several servers use PostgreSQL (--db postgres://...)`;
}

function isBusy(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || code === 'SQLITE_LOCKED');
}

/** Takes the lock on `<path>.lock` or throws ConflictError (serverLockedMessage). */
export function holdServerLock(path: string): ServerLock {
  const lockPath = `${path}.lock`;
  createPrivateFile(lockPath);
  const db = new Database(lockPath);
  try {
    db.pragma('busy_timeout = 0'); // a held lock is an answer, not something to wait for
    db.pragma('locking_mode = EXCLUSIVE');
    // No journal file next to it: the only write is this one row.
    db.pragma('journal_mode = MEMORY');
    db.exec('CREATE TABLE IF NOT EXISTS holder (pid INTEGER NOT NULL, since INTEGER NOT NULL)');
    db.transaction(() => {
      db.exec('DELETE FROM holder');
      db.prepare('INSERT INTO holder (pid, since) VALUES (?, ?)').run(process.pid, Date.now());
    })();
  } catch (e) {
    db.close();
    if (isBusy(e)) throw new ConflictError(serverLockedMessage(path));
    throw e;
  }
  return {
    release: () => {
      if (db.open) db.close();
    },
  };
}
