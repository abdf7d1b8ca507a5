/**
 * Who holds a SQLite database: `<db>.holder.json` `{pid, url, command, since}`,
 * written (0600, via rename) by `drover dev` and `drover server` once they
 * listen, removed when they stop. It only tells a second process where the
 * first one runs: the authority is the kernel lock of store/sqlite/server-lock.ts,
 * which is taken first and dies with its process. A file left by a process that
 * was killed (kill -9) names a pid that is gone, or a live pid that does not
 * hold the lock any more: the next holder overwrites it, and a refusal reads it
 * only after the lock said "held".
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';

export interface Holder {
  pid: number;
  url: string;
  command: 'dev' | 'server';
  /** ISO time the holder started listening. */
  since: string;
}

export function holderPath(dbFile: string): string {
  return `${dbFile}.holder.json`;
}

export function writeHolder(dbFile: string, holder: Holder): void {
  const path = holderPath(dbFile);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(holder) + '\n', { mode: 0o600 });
  renameSync(tmp, path);
}

/** Removes the file if it is still this process's (a later holder's file is left alone). */
export function removeHolder(dbFile: string, pid = process.pid): void {
  if (readHolder(dbFile)?.pid === pid) rmSync(holderPath(dbFile), { force: true });
}

/** The holder file's content if it is well formed and its pid is alive, else null. */
export function readHolder(dbFile: string): Holder | null {
  let h: Partial<Holder>;
  try {
    h = JSON.parse(readFileSync(holderPath(dbFile), 'utf8')) as Partial<Holder>;
  } catch {
    return null;
  }
  if (typeof h.pid !== 'number' || !Number.isInteger(h.pid) || h.pid <= 0 || typeof h.url !== 'string') return null;
  if (!isAlive(h.pid)) return null;
  return { pid: h.pid, url: h.url, command: h.command === 'server' ? 'server' : 'dev', since: typeof h.since === 'string' ? h.since : '' };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'; // alive, someone else's
  }
}

/** The refusal when the lock is held: where the other one runs, when its holder file says so. */
export function heldMessage(what: string, dbFile: string, holder: Holder | null, way: string): string {
  if (!holder) return `${what} is in use by another Drover server (it holds ${dbFile}.lock); ${way}`;
  return `${what} is in use by another drover ${holder.command}: ${holder.url} (pid ${holder.pid}${holder.since ? `, since ${holder.since}` : ''}); ${way}`;
}
