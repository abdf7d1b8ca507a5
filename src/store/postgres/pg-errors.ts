/**
 * PostgreSQL failures that are about the environment, not the request (the
 * server is down, restarting, out of connections or disk; the connection was
 * cut; a connect timed out), become UnavailableError: the API answers 503 and
 * the client may retry unchanged. Everything else passes through untouched,
 * as in sqlite-errors.ts.
 */
import { isDroverError, UnavailableError } from '../../core/errors.js';

/** Node socket errors on the way to the server. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);

/** SQLSTATEs (besides class 08, connection exception) that mean "the database cannot serve now". */
const UNAVAILABLE_SQLSTATES: ReadonlyMap<string, string> = new Map([
  ['57P01', 'the server is shutting down (admin_shutdown)'],
  ['57P02', 'the server crashed (crash_shutdown)'],
  ['57P03', 'the server is starting up or shutting down (cannot_connect_now)'],
  ['57P05', 'the session was idle too long (idle_session_timeout)'],
  ['25P03', 'the transaction was idle too long (idle_in_transaction_session_timeout)'],
  ['57014', 'the statement timed out (query_canceled)'],
  ['53000', 'the server is out of resources (insufficient_resources)'],
  ['53100', 'the disk is full (disk_full)'],
  ['53200', 'the server is out of memory (out_of_memory)'],
  ['53300', 'too many connections (too_many_connections)'],
  ['40001', 'the transaction kept conflicting with others (serialization_failure)'],
  ['40P01', 'the transaction kept deadlocking with others (deadlock_detected)'],
]);

/** Errors node-postgres raises itself, without a code, when the connection is gone or never came up. */
const CONNECTION_MESSAGES: readonly RegExp[] = [
  /^Connection terminated/,
  /timeout exceeded when trying to connect/,
  /not queryable/,
  /^Query read timeout/,
  /connection timeout/i,
];

function errCode(e: unknown): string | null {
  if (typeof e !== 'object' || e === null) return null;
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' ? code : null;
}

/** The message; an AggregateError (connecting to every address of a host failed) has an empty one of its own. */
export function errMessage(e: unknown): string {
  if (e instanceof AggregateError && !e.message) return e.errors.map(errMessage).join('; ') || e.name;
  return e instanceof Error ? e.message || e.name : String(e);
}

/**
 * Why the database is unavailable, or null if `e` is not such a failure.
 * Looks through `cause` (pg-pool wraps a connect timeout around the socket error).
 */
export function unavailableReason(e: unknown, depth = 0): string | null {
  if (e === null || e === undefined || depth > 3 || isDroverError(e)) return null;
  const code = errCode(e);
  if (code !== null) {
    if (NETWORK_CODES.has(code)) return `cannot reach the server (${code})`;
    if (/^08[0-9A-Z]{3}$/.test(code)) return `connection failure (SQLSTATE ${code})`;
    const what = UNAVAILABLE_SQLSTATES.get(code);
    if (what) return `${what}, SQLSTATE ${code}`;
  }
  if (e instanceof AggregateError) {
    for (const inner of e.errors) {
      const r = unavailableReason(inner, depth + 1);
      if (r) return r;
    }
  }
  if (e instanceof Error && CONNECTION_MESSAGES.some((re) => re.test(e.message))) return 'the connection failed';
  if (typeof e === 'object' && 'cause' in e) return unavailableReason((e as { cause?: unknown }).cause, depth + 1);
  return null;
}

/**
 * True when the error says the connection itself is unusable (as opposed to a
 * statement failing on a healthy connection): such a client must be discarded,
 * and work that had not yet been committed may be retried on a fresh one.
 */
export function isConnectionError(e: unknown): boolean {
  const code = errCode(e);
  if (code !== null && (NETWORK_CODES.has(code) || /^08/.test(code) || code === '57P01' || code === '57P02' || code === '57P03' || code === '57P05' || code === '25P03')) {
    return true;
  }
  return e instanceof Error && CONNECTION_MESSAGES.some((re) => re.test(e.message));
}

/** Deadlocks and serialization failures: the transaction was rolled back and may simply run again. */
export function isTransientConflict(e: unknown): boolean {
  const code = errCode(e);
  return code === '40001' || code === '40P01';
}

/**
 * Returns the error to throw in place of `e`. `outcome` tells the caller what
 * became of a write: by default nothing was applied; a connection lost while
 * COMMIT was in flight cannot know.
 */
export function mapPgError(e: unknown, outcome = 'nothing was changed'): unknown {
  const reason = unavailableReason(e);
  if (reason === null) return e;
  const err = new UnavailableError(`database unavailable: ${reason} (${errMessage(e)}); ${outcome}, retry later`);
  (err as { cause?: unknown }).cause = e;
  return err;
}

/** True for a UNIQUE / PRIMARY KEY violation (23505). */
export function isUniqueViolation(e: unknown): boolean {
  return errCode(e) === '23505';
}
