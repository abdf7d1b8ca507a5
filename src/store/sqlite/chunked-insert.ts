/**
 * Many rows through multi-row `INSERT ... VALUES (...), (...)` statements,
 * inside the caller's write: full chunks of CHUNK_ROWS rows, then the rest
 * split into powers of two (64, 32, ..., 1). So a table's inserts use at most
 * eight statement texts, each prepared once per connection (SqliteDb.q caches
 * them for the connection's life), and a batch of n rows runs
 * floor(n / 128) + popcount(n % 128) statements: 10 for 1,000 rows.
 *
 * Why chunks and not one statement per row or one over json_each(): a
 * statement that fires triggers opens a statement journal (db.ts temp_store),
 * which one row per statement pays per row; and reading each column back out
 * of a JSON text with `->>` cost more than binding it. Measured (issue 9,
 * 2026-12-05; the shared 2-core machine):
 *  - the tasks statement alone (1,000-task batches into a copy of a server's
 *    database holding 60,000 tasks, synchronous=FULL, timed apart from the
 *    events and the commit; five pairs alternating): json_each 13.8-18.8 ms
 *    a batch, 100-row VALUES chunks 9.5-13.9 ms; one prepared INSERT per row
 *    20.4-22.1 ms against json_each's 19.7-19.8 ms in two more pairs;
 *  - end to end with this file's 128-row chunks (a `drover server`, 20
 *    sequential 1,000-task batches with `Prefer: return=minimal`, eight pairs
 *    alternating in two groups half an hour apart): p50 22.3-25.5 ms a batch
 *    before, 17.1-20.9 ms after (one pair 25.0).
 * 128 rows bind 2,944 parameters at 23 a row, far below SQLite's limit of
 * 32,766.
 */
import type { SqliteDb } from './db.js';

export const CHUNK_ROWS = 128;

/** The statement sizes for `n` rows, largest first: 128s, then the binary digits of the rest. */
export function chunkSizes(n: number): number[] {
  const out: number[] = [];
  for (let left = n; left >= CHUNK_ROWS; left -= CHUNK_ROWS) out.push(CHUNK_ROWS);
  for (let bit = CHUNK_ROWS >> 1; bit >= 1; bit >>= 1) if (n % CHUNK_ROWS & bit) out.push(bit);
  return out;
}

/**
 * An insert of `k` rows, each `row` (its `?` are the row's own values; named
 * parameters such as @now are shared by every row): the statement text for
 * each k, built once.
 */
export function valuesInsert(head: string, row: string): (k: number) => string {
  const texts = new Map<number, string>();
  return (k) => {
    let sql = texts.get(k);
    if (sql === undefined) {
      sql = `${head} VALUES ${Array<string>(k).fill(row).join(', ')}`;
      texts.set(k, sql);
    }
    return sql;
  };
}

/**
 * Runs `sqlFor(k)` over `values` (perRow values a row, rows in order) in the
 * sizes of chunkSizes, with `named` bound in each. A throw leaves the rows of
 * the chunks before it in place: the caller's write (a savepoint, db.ts) is
 * what makes the whole insert all or nothing.
 */
export function insertChunked(d: SqliteDb, sqlFor: (k: number) => string, perRow: number, values: readonly unknown[], named: Record<string, unknown>): void {
  if (values.length % perRow !== 0) throw new RangeError(`insertChunked: ${values.length} values are not whole rows of ${perRow}`);
  let at = 0;
  for (const k of chunkSizes(values.length / perRow)) {
    d.q(sqlFor(k)).run(values.slice(at, at + k * perRow), named);
    at += k * perRow;
  }
}
