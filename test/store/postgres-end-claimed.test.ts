/**
 * The one-statement end and refill on PostgreSQL (store/postgres/end-claimed.ts):
 * which batches it takes (pure), and that it really applies them, so the
 * contract tests of endAndClaim with `claimed` (contract-attempt-batches.ts)
 * cover this path and not only the locking one it falls back to.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { DEFAULT_RETRY_POLICY } from '../../src/core/retry-policy.js';
import { newTaskId } from '../../src/core/ids.js';
import type { AttemptEndResult, Claim, EndRequest } from '../../src/store/attempts.js';
import type { Db } from '../../src/store/postgres/db.js';
import { endClaimedAndClaim, planClaimedEnds, type ClaimedEndsResult } from '../../src/store/postgres/end-claimed.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createTestDatabase, dropAllTestDatabases, PG_SKIP_REASON, requirePostgres } from '../support/postgres.js';
import { makeSpec } from './contract.js';
import { endInput, LEASE, T0 } from './contract-harness.js';

const PG = await requirePostgres();
after(async () => {
  if (PG) await dropAllTestDatabases();
});

const claimedOf = (c: Pick<Claim, 'task' | 'attempt'>) => ({
  id: c.task.id,
  retry: c.task.retry,
  retriesUsed: c.task.retriesUsed,
  lostCount: c.task.lostCount,
  dagRunId: c.task.dagRunId,
  attempt: c.attempt.number,
});

function exit(c: Pick<Claim, 'task' | 'attempt'>, outcome: Parameters<typeof endInput>[0], over: Partial<EndRequest> = {}): EndRequest {
  return { attemptId: c.attempt.id, fencingToken: c.attempt.fencingToken, end: endInput(outcome), actor: 'worker:w1', guard: { workerId: 'w1' }, claimed: claimedOf(c), ...over };
}

describe('planClaimedEnds: which batches the one-statement path takes', () => {
  const task = { id: 'T1', retry: { ...DEFAULT_RETRY_POLICY, maxRetries: 1 }, retriesUsed: 0, lostCount: 0, dagRunId: null, state: 'running' };
  const c = (id: number) => ({ task: { ...task, id: `T${id}` }, attempt: { id, number: 1, fencingToken: 'f'.repeat(32) } }) as unknown as Claim;

  it('plans each end from its claimed task, as core/attempt-end.ts would from the rows', () => {
    const p = planClaimedEnds([exit(c(1), 'succeeded'), exit(c(2), 'failed'), exit(c(3), 'timed_out')], T0);
    assert.deepEqual(
      p?.map((x) => [x.plan.state, x.plan.retriesUsed, x.plan.event.reason]),
      [
        ['succeeded', 0, 'attempt_succeeded'],
        ['retrying', 1, 'attempt_failed'],
        ['retrying', 1, 'attempt_timed_out'],
      ],
    );
  });

  it('plans a DAG step\'s end too (attempts.ts then runs it in the transaction that progresses the run)', () => {
    const p = planClaimedEnds([exit(c(1), 'succeeded', { claimed: { ...claimedOf(c(1)), dagRunId: 'R1' } })], T0);
    assert.equal(p?.[0]?.plan.state, 'succeeded');
  });

  it('takes no batch with a request it cannot plan alone, or whose claim could not see what it requeues', () => {
    const cases: Array<[string, EndRequest[]]> = [
      ['empty', []],
      ['no claimed task', [exit(c(1), 'succeeded', { claimed: undefined })]],
      ['no worker guard (a server-side end)', [exit(c(1), 'succeeded', { guard: {} })]],
      ['the sweeper', [exit(c(1), 'lost', { guard: { workerId: 'w1', leaseExpired: true } })]],
      ['one attempt twice', [exit(c(1), 'succeeded'), exit(c(1), 'failed')]],
      ['an absurd id', [exit(c(1), 'succeeded', { attemptId: 2 ** 60 })]],
      ['a requeue (lost) among others', [exit(c(1), 'succeeded'), exit(c(2), 'lost')]],
    ];
    for (const [what, batch] of cases) assert.equal(planClaimedEnds(batch, T0), null, what);
  });
});

describe('endClaimedAndClaim on PostgreSQL', { skip: PG ? false : PG_SKIP_REASON }, () => {
  const open = async (): Promise<{ store: PostgresStore; db: Db; close(): Promise<void> }> => {
    const t = await createTestDatabase();
    const store = openPostgresStore(t.url);
    // The store's own pool: what endAndClaim runs on (a private field, read here on purpose).
    const db = (store as unknown as { db: Db }).db;
    return { store, db, close: async () => (await store.close(), await t.drop()) };
  };
  const submit = (store: PostgresStore, i: number) => store.createTask(newTaskId(T0 + i), 'alice', makeSpec({ name: 'echo', retry: { ...DEFAULT_RETRY_POLICY, maxRetries: 1 } }), 'user:alice', T0 + i);

  it('applies every end of a fresh batch and claims the refill in the same statement', async () => {
    const { store, db, close } = await open();
    try {
      for (let i = 0; i < 4; i++) await submit(store, i);
      const [a, b] = await store.claimMany({ id: 'w1', labels: {} }, 2, T0 + 10, LEASE);
      const res = await endClaimedAndClaim(db, planClaimedEnds([exit(a!, 'succeeded'), exit(b!, 'failed')], T0 + 20)!, { worker: { id: 'w1', labels: {} }, max: 2, leaseMs: LEASE }, T0 + 20);
      assert.deepEqual(
        res.ended.map((e) => e?.task.state),
        ['succeeded', 'retrying'],
      );
      assert.equal(res.claims.length, 2);
      for (const e of res.ended) assert.deepEqual(await store.getTask(e!.task.id), e!.task);
    } finally {
      await close();
    }
  });

  it('leaves a request whose rows changed since its claim (cancelled) to the locking path: undefined, nothing written for it', async () => {
    const { store, db, close } = await open();
    try {
      for (let i = 0; i < 2; i++) await submit(store, i);
      const [a, b] = await store.claimMany({ id: 'w1', labels: {} }, 2, T0 + 10, LEASE);
      await store.cancelTask(a!.task.id, 'user:alice', T0 + 15);
      const before = [await store.getTask(a!.task.id), await store.getAttempt(a!.attempt.id), (await store.listEvents(a!.task.id)).length];
      const res = await endClaimedAndClaim(db, planClaimedEnds([exit(a!, 'cancelled'), exit(b!, 'succeeded')], T0 + 20)!, null, T0 + 20);
      assert.equal(res.ended[0], undefined);
      assert.equal(res.ended[1]?.task.state, 'succeeded');
      assert.deepEqual([await store.getTask(a!.task.id), await store.getAttempt(a!.attempt.id), (await store.listEvents(a!.task.id)).length], before);
    } finally {
      await close();
    }
  });

  for (const first of ['the one statement', 'the locking way'] as const) {
    it(`racing ends of the same attempts the locking way (another server, the sweeper), ${first} sent first: each attempt ends once`, async () => {
      const { store, db, close } = await open();
      try {
        const n = 40;
        for (let i = 0; i < n; i++) await submit(store, i);
        const claims = await store.claimMany({ id: 'w1', labels: {} }, n, T0 + 10, LEASE);
        assert.equal(claims.length, n);
        const fastEnds = () => endClaimedAndClaim(db, planClaimedEnds(claims.map((c) => exit(c, 'succeeded')), T0 + 20)!, null, T0 + 20);
        const lockedEnds = () => store.endAttempts(claims.map((c) => ({ ...exit(c, 'failed'), claimed: undefined })), T0 + 20);
        let fast: ClaimedEndsResult, locked: Array<AttemptEndResult | null>;
        if (first === 'the one statement') [fast, locked] = await Promise.all([fastEnds(), lockedEnds()]);
        else [locked, fast] = await Promise.all([lockedEnds(), fastEnds()]);
        for (const [i, c] of claims.entries()) {
          const byFast = fast.ended[i] !== undefined;
          assert.notEqual(byFast, locked[i] !== null, `attempt ${c.attempt.id}: ended by exactly one side`);
          const task = (await store.getTask(c.task.id))!;
          assert.equal(task.state, byFast ? 'succeeded' : 'retrying');
          const ends = (await store.listEvents(c.task.id)).filter((e) => e.from === 'running');
          assert.equal(ends.length, 1);
        }
      } finally {
        await close();
      }
    });
  }
});
