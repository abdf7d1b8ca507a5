/** File creation for the SQLite store: database files hold task env values, so only their owner may read them. */
import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';

/** Of the database file; SQLite gives its -wal, -shm (and -journal) files the same mode. */
export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;

/**
 * Creates the parent directories (0700) and the file (0600) unless they exist.
 * The file is created before better-sqlite3 opens it, so it never exists with
 * the default mode; SQLite gives the -wal and -shm files the mode of the
 * database file. An existing file keeps the mode its owner gave it.
 */
export function createPrivateFile(path: string): void {
  const dir = resolve(dirname(path));
  const first = mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  if (first !== undefined) {
    // The mode given to mkdir is narrowed by the umask; set it exactly on each directory made here.
    let d = first;
    chmodSync(d, DIR_MODE);
    for (const part of relative(first, dir).split(sep).filter(Boolean)) {
      d = `${d}${sep}${part}`;
      chmodSync(d, DIR_MODE);
    }
  }
  let fd: number;
  try {
    fd = openSync(path, 'wx', FILE_MODE);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw e;
  }
  try {
    fchmodSync(fd, FILE_MODE); // exact, whatever the umask
  } finally {
    closeSync(fd);
  }
}

