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

export const RAW_SQLITE_CONFIG = 'better-sqlite3, journal_mode=WAL, synchronous=FULL, one INSERT (id, spec JSON, state, created_at) committed per row';

/** n inserts, each its own commit, after `warm` untimed ones (sizes.warmUp). */
export function rawSqliteInserts(n: number, warm: number): { s: number; warmS: number } {
  const dir = mkdtempSync(join(tmpdir(), 'drover-bench-raw-'));
  const db = new Database(join(dir, 'raw.db'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec('CREATE TABLE tasks (id TEXT PRIMARY KEY, spec TEXT NOT NULL, state TEXT NOT NULL, created_at INTEGER NOT NULL)');
    const ins = db.prepare('INSERT INTO tasks (id, spec, state, created_at) VALUES (?, ?, ?, ?)');
    const spec = JSON.stringify({ command: 'true' });
    const w0 = performance.now();
    for (let i = 0; i < warm; i++) ins.run(`w${i.toString().padStart(10, '0')}`, spec, 'ready', Date.now());
    const t0 = performance.now();
    for (let i = 0; i < n; i++) ins.run(`t${i.toString().padStart(10, '0')}`, spec, 'ready', Date.now());
    return { s: (performance.now() - t0) / 1000, warmS: (t0 - w0) / 1000 };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
