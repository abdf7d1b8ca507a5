/**
 * A worker session handles up to MAX_BATCHES_IN_FLIGHT batches of one agent's
 * messages at once (server/worker-session.ts handleQueued), against a real
 * server and its store: a hand-driven agent answers every assignment with a
 * log chunk and an exit in frames of their own, back to back, so batches
 * overlap. The server must still never hold more attempts on the worker than
 * its slots and prefetch, refill each freed slot once, and store every
 * attempt's output before its end. On both stores: on PostgreSQL the batches'
 * writes go out on separate connections, so only the session's own ordering
 * keeps an attempt's log chunk ahead of its end.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { danglingRows } from '../support/pg-integrity.js';
import { createTestDatabase, PG_SKIP_REASON, requirePostgres, type TestDatabase } from '../support/postgres.js';
import { FakeAgent } from './fake-agent.js';
import { startCluster, type Cluster } from './harness.js';

const PG = await requirePostgres();

const N = 60;
const SLOTS = 2;
const PREFETCH = 6;

for (const store of ['sqlite', 'postgres'] as const) {
  describe(`e2e: a worker session with batches in flight together (${store})`, { skip: store === 'postgres' && !PG ? PG_SKIP_REASON : false }, () => {
    let c: Cluster;
    let db: TestDatabase | undefined;
    before(async () => {
      if (store === 'postgres') db = await createTestDatabase();
      c = await startCluster({ workers: 0, ...(db ? { db: db.url } : {}) });
    });
    after(async () => {
      await c?.close();
      await db?.drop();
    });

    it('holds at most slots + prefetch, runs every task once, and keeps each output before its end', async () => {
      const r = await c.api.req('POST', '/v1/tasks/batch', { tasks: Array.from({ length: N }, (_, i) => ({ command: 'true', name: `t${i}` })) });
      assert.equal(r.status, 201, r.text);
      const f = await FakeAgent.connect(c.url, c.workerToken);
      try {
        f.hello('pipelined', { slots: SLOTS, prefetch: PREFETCH });
        await f.next('welcome');
        // Rounds: the previous round's answers freed every slot and prefetch place, so the server must fill
        // them all: wait for each of those assignments (a loaded machine refills them over several of the
        // session's batches, more than 300 ms apart on CI's PostgreSQL, so no quiet gap may end a round early).
        // Then no further one may come while none is answered (it holds at most slots + prefetch). Then answer
        // the round all at once, each report in its own frame, so the session's batches overlap.
        const seen = new Set<number>();
        let done = 0;
        while (done < N) {
          const want = Math.min(SLOTS + PREFETCH, N - done);
          const round: Array<{ attemptId: number; fencingToken: string; taskId: string }> = [];
          while (round.length < want) {
            const a = await f.next('assign', 15_000).catch((e: Error) => {
              throw new Error(`every free slot and prefetch place filled: ${round.length} of ${want} assignments came (${e.message})`);
            });
            round.push(a.attempt);
          }
          const extra = await f.next('assign', 300).catch(() => null);
          assert.equal(extra, null, `${want + 1} attempts held at once: more than ${SLOTS} slots + ${PREFETCH} prefetch`);
          for (const a of round) {
            assert.ok(!seen.has(a.attemptId), `attempt ${a.attemptId} assigned twice`);
            seen.add(a.attemptId);
          }
          for (const a of round) {
            f.send({ type: 'started', attemptId: a.attemptId, fencingToken: a.fencingToken, pid: 0 });
            f.send({ type: 'log', attemptId: a.attemptId, fencingToken: a.fencingToken, seq: 0, stream: 'stdout', data: Buffer.from(`out of ${a.taskId}\n`).toString('base64') });
            f.send({ type: 'exit', attemptId: a.attemptId, fencingToken: a.fencingToken, outcome: 'succeeded', exitCode: 0, signal: null, error: null, durationMs: 1 });
          }
          done += round.length;
        }
        for (let i = 0; i < N; i++) await f.next('exit_ack', 15_000);
        const counts = (await c.api.req('GET', '/v1/stats/counts')).body.counts;
        assert.equal(counts.succeeded, N, JSON.stringify(counts));
        const tasks = (await c.api.req('GET', `/v1/tasks?limit=${N}`)).body.tasks as Array<{ id: string; attempts: number }>;
        for (const t of tasks) {
          assert.equal(t.attempts, 1, `task ${t.id} ran once`);
          const logs = await c.api.req('GET', `/v1/tasks/${t.id}/logs`);
          assert.equal(logs.text, `out of ${t.id}\n`, `task ${t.id}'s output was stored with its end`);
        }
      } finally {
        f.close();
      }
    });

    if (store === 'postgres') {
      it('leaves every attempt and event with its task and each task its own current attempt (no foreign keys check it on PostgreSQL)', async () => {
        assert.deepEqual(await danglingRows(db!.url), { attempts: 0, events: 0, currentAttempts: 0 });
        const n = await sqlCount(db!.url);
        assert.deepEqual(n, { attempts: N, events: 4 * N }, 'the check looked at the rows this test wrote');
      });
    }
  });
}

/** Attempts and events in the database: what danglingRows just checked. */
async function sqlCount(url: string): Promise<{ attempts: number; events: number }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<{ attempts: number; events: number }>('SELECT (SELECT count(*) FROM attempts)::int AS attempts, (SELECT count(*) FROM task_events)::int AS events')).rows[0]!;
  } finally {
    await c.end();
  }
}
