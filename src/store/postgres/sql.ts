/**
 * What the PostgreSQL concern files share: the database clock for leases,
 * the scheduler's actor name, the check of a batch size.
 */
import { InvalidInputError } from '../../core/errors.js';

/**
 * The database's clock in epoch milliseconds: every lease value and every
 * lease comparison uses it (capabilities.leaseClock = 'database'), never the
 * `now` a server passes in, so servers whose clocks disagree still agree on
 * which leases expired (store/attempts.ts, "Clocks").
 *
 * clock_timestamp(), not now(): now() is the start of the transaction, which
 * may be long before a row lock was granted. Wrapped in a scalar subquery so
 * that PostgreSQL evaluates it once per statement (an InitPlan): one value for
 * every row a statement renews, and a value the planner can use as an index
 * bound (`lease_expires_at < (SELECT ...)` scans attempts_running_lease),
 * which a volatile function in the WHERE clause could not be.
 */
export const DB_NOW_MS = '(SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint)';

/** Actor of the transitions the scheduler makes on its own (claim, backoff). */
export const SCHEDULER_ACTOR = 'scheduler';

/** A positive integer batch size, or InvalidInputError naming `field`. */
export function checkLimit(field: string, limit: number): number {
  if (!Number.isInteger(limit) || limit < 1) throw new InvalidInputError(field, `must be an integer >= 1, got ${limit}`);
  return limit;
}
