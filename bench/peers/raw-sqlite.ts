/**
 * The SQLite ceiling for one-at-a-time submits: a better-sqlite3 loop that
 * inserts one row and commits it (autocommit), with Drover's pragmas
 * (journal_mode=WAL, synchronous=FULL; src/store/sqlite/db.ts). No HTTP, no
 * validation, no events: what the disk and SQLite allow.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterWarmUp, type WarmedSpan } from '../lib/stats.js';

export const RAW_SQLITE_CONFIG = 'better-sqlite3, journal_mode=WAL, synchronous=FULL, one INSERT (id, spec JSON, state, created_at) committed per row';

/** n inserts, each its own commit, after `warm` untimed ones (sizes.warmUp). */
export async function rawSqliteInserts(n: number, warm: number): Promise<WarmedSpan> {
  const dir = mkdtempSync(join(tmpdir(), 'drover-bench-raw-'));
  const db = new Database(join(dir, 'raw.db'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec('CREATE TABLE tasks (id TEXT PRIMARY KEY, spec TEXT NOT NULL, state TEXT NOT NULL, created_at INTEGER NOT NULL)');
    const ins = db.prepare('INSERT INTO tasks (id, spec, state, created_at) VALUES (?, ?, ?, ?)');
    const spec = JSON.stringify({ command: 'true' });
    const inserts = (prefix: string, k: number) => {
      for (let i = 0; i < k; i++) ins.run(`${prefix}${i.toString().padStart(10, '0')}`, spec, 'ready', Date.now());
    };
    return await afterWarmUp(() => inserts('w', warm), () => inserts('t', n));
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
