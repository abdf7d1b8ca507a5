/**
 * The references PostgreSQL's schema no longer enforces (migration 15 dropped
 * their foreign keys from the claim and end path): every attempt and every
 * event belongs to a task that exists, and a task's current attempt exists
 * and is one of its own (stricter than the dropped key, which checked only
 * that the attempt existed). test/store/postgres.test.ts runs this on the
 * database of every store it opens, before dropping it, so each contract test
 * checks what the store's statements left behind.
 */
import pg from 'pg';

export interface DanglingRows {
  /** Attempts whose task_id names no task. */
  attempts: number;
  /** Events whose task_id names no task. */
  events: number;
  /** Tasks whose current_attempt_id names no attempt of that task. */
  currentAttempts: number;
}

export const DANGLING_SQL = `SELECT
  (SELECT count(*) FROM attempts a WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = a.task_id))::int AS attempts,
  (SELECT count(*) FROM task_events e WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = e.task_id))::int AS events,
  (SELECT count(*) FROM tasks t WHERE t.current_attempt_id IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM attempts a WHERE a.id = t.current_attempt_id AND a.task_id = t.id))::int AS "currentAttempts"`;

/** Counts the dangling references in the database at `url` (a connection of its own). */
export async function danglingRows(url: string): Promise<DanglingRows> {
  const c = new pg.Client({ connectionString: url, application_name: 'drover-test-integrity' });
  await c.connect();
  try {
    return (await c.query<DanglingRows>(DANGLING_SQL)).rows[0]!;
  } finally {
    await c.end();
  }
}

/** Throws, naming what dangles, unless nothing does. */
export async function assertNoDanglingRows(url: string): Promise<void> {
  const d = await danglingRows(url);
  if (d.attempts || d.events || d.currentAttempts) {
    throw new Error(`dangling references left in the database: ${JSON.stringify(d)} (test/support/pg-integrity.ts)`);
  }
}
