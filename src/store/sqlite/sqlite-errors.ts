/**
 * SQLite failures that are about the environment, not the request (disk full,
 * I/O error, read-only file, another process holding the write lock past
 * busy_timeout), become UnavailableError: the API answers 503 and the client
 * may retry unchanged. Everything else passes through untouched.
 */
import { UnavailableError } from '../../core/errors.js';

/** Primary result codes; better-sqlite3 reports extended codes such as SQLITE_IOERR_WRITE, matched by prefix. */
const UNAVAILABLE: ReadonlyArray<[prefix: string, what: string]> = [
  ['SQLITE_FULL', 'the disk is full'],
  ['SQLITE_IOERR', 'an I/O error occurred'],
  ['SQLITE_READONLY', 'the database is read-only'],
  ['SQLITE_BUSY', 'the database is locked by another writer'],
];

function sqliteCode(e: unknown): string | null {
  if (typeof e !== 'object' || e === null) return null;
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : null;
}

/** Returns the error to throw in place of `e`. */
export function mapSqliteError(e: unknown): unknown {
  const code = sqliteCode(e);
  if (code === null) return e;
  for (const [prefix, what] of UNAVAILABLE) {
    if (code === prefix || code.startsWith(`${prefix}_`)) {
      const detail = e instanceof Error ? `: ${e.message}` : '';
      const err = new UnavailableError(`store unavailable, ${what} (${code}${detail}); the change was not applied, retry later`);
      (err as { cause?: unknown }).cause = e;
      return err;
    }
  }
  return e;
}

/** True for a UNIQUE / PRIMARY KEY violation. */
export function isUniqueViolation(e: unknown): boolean {
  const code = sqliteCode(e);
  return code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}
