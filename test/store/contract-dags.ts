/**
 * Store contract, issue 12: DAG definitions, runs and their progress
 * (store/dags.ts). A run's progress is written by the transaction that ends
 * a step: each test checks the state right after the call that ended it,
 * with no other call in between. Races between servers run where the
 * backend has two handles (ContractHooks.sibling: PostgreSQL).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { ConflictError, InvalidInputError } from '../../src/core/errors.js';
import { newTaskId } from '../../src/core/ids.js';
import type { DagDefinition, DagStepSpec } from '../../src/core/dag/dag-definition.js';
import type { StepCondition } from '../../src/core/dag/dag-graph.js';
import { encodeStepStates } from '../../src/core/dag/step-states.js';
import type { Claim, DagRecord, Store } from '../../src/store/store.js';
import { endInput, GUESSED_TOKEN, Harness, LEASE, makeSpec, T0, type ContractHooks, type Opened, raceBetweenServers } from './contract-harness.js';

function step(name: string, dependsOn: string[] = [], when: StepCondition = 'success', retries = 0): DagStepSpec {
  return { name, dependsOn, when, task: makeSpec({ name: `dag/${name}`, command: 'true', args: [name], env: { STEP: name }, retry: { maxRetries: retries, baseDelayMs: 1000, factor: 2, maxDelayMs: 60_000 } }) };
}

function definition(steps: DagStepSpec[], name = 'etl', params: Record<string, string> | null = null): DagDefinition {
  return { name, description: `the ${name} DAG`, params, steps };
}

const hashOf = (d: DagDefinition) => createHash('sha256').update(JSON.stringify(d)).digest('hex');

/** A → (B, C) → D; a `when: failure` cleanup after A. */
const DIAMOND = () => definition([step('a'), step('b', ['a']), step('c', ['a']), step('d', ['b', 'c']), step('cleanup', ['a'], 'failure')]);

export function runDagContract(name: string, open: Opened, hooks: ContractHooks = {}): void {
  describe(`Store contract, DAGs: ${name}`, () => {
    const h = Harness.use(open, hooks);
    const worker = { id: 'w1', labels: {} };

    async function apply(def: DagDefinition, owner = 'alice', now = T0): Promise<DagRecord> {
      return (await h.store.applyDag(newTaskId(now), owner, def, hashOf(def), now)).dag;
    }

    async function start(dag: DagRecord, params: Record<string, string> = {}, now = T0 + 10, store: Store = h.store) {
      const runId = newTaskId(now);
      const run = await store.startDagRun({ runId, dag, params, taskIds: dag.definition.steps.map(() => newTaskId(now)), actor: 'user:alice', now });
      const steps = new Map((await store.dagRunSteps(run.id)).map((s) => [s.step, s]));
      return { run, steps };
    }

    /**
     * The steps' states by name. Also checks the run's step states (what its
     * progress decides from, core/dag/step-states.ts) against the tasks: for
     * a running run they must agree on every step.
     */
    async function stateOf(runId: string): Promise<Record<string, string>> {
      const steps = await h.store.dagRunSteps(runId);
      const run = (await h.store.getDagRun(runId))!;
      if (run.state === 'running') assert.equal(run.stepStates, encodeStepStates(steps.map((s) => ({ state: s.state, skipReason: s.skipReason }))), 'the run\'s step states match its tasks');
      return Object.fromEntries(steps.map((s) => [s.step, s.skipReason ? `${s.state}:${s.skipReason}` : s.state]));
    }

    /** Claims every waiting task (the worker's view), by step name. */
    async function claimAll(now: number, store: Store = h.store): Promise<Map<string, Claim>> {
      const claims = await store.claimMany(worker, 100, now, LEASE);
      return new Map(claims.map((c) => [c.task.dagStep!, c]));
    }

    function end(c: Claim, outcome: 'succeeded' | 'failed', now: number, store: Store = h.store) {
      return store.endAttempt(c.attempt.id, c.attempt.fencingToken, endInput(outcome), 'worker:w1', now, { workerId: 'w1' });
    }

    describe('definitions', () => {
      it('stores a new version only when the definition changed, and reads any version', async () => {
        const v1 = await apply(DIAMOND());
        assert.equal(v1.version, 1);
        const again = await h.store.applyDag(newTaskId(T0 + 1), 'alice', DIAMOND(), hashOf(DIAMOND()), T0 + 1);
        assert.equal(again.created, false);
        assert.equal(again.dag.version, 1);
        const changed = definition([step('only')]);
        const v2 = await h.store.applyDag(newTaskId(T0 + 2), 'alice', changed, hashOf(changed), T0 + 2);
        assert.equal(v2.created, true);
        assert.equal(v2.dag.version, 2);
        assert.equal(v2.dag.id, v1.id, 'a DAG keeps its id across versions');
        assert.deepEqual((await h.store.getDag('alice', 'etl'))!.definition, changed);
        assert.deepEqual((await h.store.getDag('alice', 'etl', 1))!.definition, DIAMOND());
        assert.equal(await h.store.getDag('alice', 'etl', 3), null);
        assert.equal(await h.store.getDag('bob', 'etl'), null);
        assert.deepEqual((await h.store.getDagVersion(v1.id, 1))!.hash, hashOf(DIAMOND()));
      });

      it('lists the newest version of each DAG, per owner or all, with a keyset cursor', async () => {
        await apply(DIAMOND());
        await apply(definition([step('x')], 'other'), 'alice', T0 + 1);
        await apply(definition([step('y')], 'etl'), 'bob', T0 + 2);
        await apply(definition([step('a'), step('b', ['a'])]), 'alice', T0 + 3);
        const mine = await h.store.listDags({ owner: 'alice', limit: 1 });
        assert.deepEqual(
          mine.dags.map((d) => [d.name, d.version, d.stepCount, d.description]),
          [['etl', 2, 2, 'the etl DAG']],
        );
        const rest = await h.store.listDags({ owner: 'alice', limit: 10, cursor: mine.nextCursor! });
        assert.deepEqual(rest.dags.map((d) => d.name), ['other']);
        assert.equal(rest.nextCursor, null);
        assert.equal((await h.store.listDags({ limit: 10 })).dags.length, 3);
      });
    });

    describe('runs', () => {
      it('starts every step in one go: roots waiting, the rest pending, each with the run in its env', async () => {
        const dag = await apply(DIAMOND());
        const { run, steps } = await start(dag, { date: '2026-12-01' });
        assert.deepEqual([run.state, run.stepCount, run.params, run.dagName, run.version], ['running', 5, { date: '2026-12-01' }, 'etl', 1]);
        assert.deepEqual(await stateOf(run.id), { a: 'waiting', b: 'ready', c: 'ready', d: 'ready', cleanup: 'ready' });
        const a = (await h.store.getTask(steps.get('a')!.taskId))!;
        assert.equal(a.dagRunId, run.id);
        assert.equal(a.dagStep, 'a');
        assert.equal(a.name, 'dag/a');
        assert.deepEqual(a.env, { STEP: 'a', DROVER_DAG_RUN: run.id, DROVER_DAG_STEP: 'a', DROVER_PARAM_DATE: '2026-12-01' });
        assert.deepEqual((await h.store.listEvents(a.id)).map((e) => e.reason), ['submitted', 'released']);
        assert.deepEqual((await h.store.listEvents(steps.get('d')!.taskId)).map((e) => e.reason), ['submitted']);
        // Only the root can be claimed.
        assert.deepEqual([...(await claimAll(T0 + 20)).keys()], ['a']);
      });

      it('releases dependents in the transaction that ends a step; fan-in waits for all; the run ends with its last step', async () => {
        const dag = await apply(DIAMOND());
        const { run } = await start(dag);
        const a = (await claimAll(T0 + 20)).get('a')!;
        await end(a, 'succeeded', T0 + 30);
        assert.deepEqual(await stateOf(run.id), { a: 'succeeded', b: 'waiting', c: 'waiting', d: 'ready', cleanup: 'skipped:condition_not_met' });
        const bc = await claimAll(T0 + 40);
        assert.deepEqual([...bc.keys()].sort(), ['b', 'c']);
        await end(bc.get('b')!, 'succeeded', T0 + 50);
        assert.equal((await stateOf(run.id)).d, 'ready', 'd waits for c too');
        await end(bc.get('c')!, 'succeeded', T0 + 60);
        assert.equal((await stateOf(run.id)).d, 'waiting');
        const released = (await h.store.listEvents((await h.store.dagRunSteps(run.id)).find((s) => s.step === 'd')!.taskId)).at(-1)!;
        assert.deepEqual([released.from, released.to, released.reason, released.actor, released.detail], ['ready', 'waiting', 'released', 'dag', { dag: { step: 'd', dependencies: ['b', 'c'] } }]);
        assert.equal((await h.store.getDagRun(run.id))!.state, 'running');
        await end((await claimAll(T0 + 70)).get('d')!, 'succeeded', T0 + 80);
        const done = (await h.store.getDagRun(run.id))!;
        assert.deepEqual([done.state, done.endedAt], ['succeeded', T0 + 80]);
        const steps = await h.store.dagRunSteps(run.id);
        assert.deepEqual(steps.map((s) => s.step), ['a', 'b', 'c', 'd', 'cleanup'], 'in definition order');
        const d = steps.find((s) => s.step === 'd')!;
        assert.deepEqual([d.releasedAt, d.startedAt, d.endedAt], [T0 + 60, T0 + 70, T0 + 80]);
      });

      it('a failed step skips its dependents (and theirs), runs its failure step, and fails the run', async () => {
        const dag = await apply(DIAMOND());
        const { run } = await start(dag);
        await end((await claimAll(T0 + 20)).get('a')!, 'failed', T0 + 30);
        assert.deepEqual(await stateOf(run.id), { a: 'failed', b: 'skipped:upstream_failed', c: 'skipped:upstream_failed', d: 'skipped:upstream_failed', cleanup: 'waiting' });
        const skipB = (await h.store.listEvents((await h.store.dagRunSteps(run.id)).find((s) => s.step === 'b')!.taskId)).at(-1)!;
        assert.deepEqual([skipB.to, skipB.reason, skipB.detail], ['skipped', 'step_skipped', { dag: { step: 'b', reason: 'upstream_failed', because: 'a' } }]);
        assert.equal((await h.store.getDagRun(run.id))!.state, 'running', 'the cleanup step still has to run');
        await end((await claimAll(T0 + 40)).get('cleanup')!, 'succeeded', T0 + 50);
        assert.deepEqual([(await h.store.getDagRun(run.id))!.state], ['failed']);
      });

      it('a released step gets the outputs of the steps it depends on in its env; others keep theirs', async () => {
        const dag = await apply(definition([step('extract'), step('count'), step('load-data', ['extract', 'count']), step('other', ['count'])]));
        const { run, steps } = await start(dag);
        const roots = await claimAll(T0 + 20);
        const withOutputs = (c: Claim, outputs: Record<string, string>, now: number) =>
          h.store.endAttempt(c.attempt.id, c.attempt.fencingToken, { ...endInput('succeeded'), outputs }, 'worker:w1', now, { workerId: 'w1' });
        await withOutputs(roots.get('extract')!, { rows: '42', path: '/tmp/x=1' }, T0 + 30);
        await end(roots.get('count')!, 'succeeded', T0 + 31);
        const load = (await h.store.getTask(steps.get('load-data')!.taskId))!;
        assert.equal(load.state, 'waiting');
        assert.deepEqual(load.env, { STEP: 'load-data', DROVER_DAG_RUN: run.id, DROVER_DAG_STEP: 'load-data', DROVER_OUT_EXTRACT_ROWS: '42', DROVER_OUT_EXTRACT_PATH: '/tmp/x=1' });
        assert.deepEqual((await h.store.getTask(steps.get('other')!.taskId))!.env, { STEP: 'other', DROVER_DAG_RUN: run.id, DROVER_DAG_STEP: 'other' });
        assert.deepEqual((await h.store.dagRunSteps(run.id)).find((s) => s.step === 'extract')!.outputs, { rows: '42', path: '/tmp/x=1' });
      });

      it('a failed attempt with retries left does not decide anything yet', async () => {
        const dag = await apply(definition([step('a', [], 'success', 2), step('b', ['a'])]));
        const { run } = await start(dag);
        await end((await claimAll(T0 + 20)).get('a')!, 'failed', T0 + 30);
        assert.deepEqual(await stateOf(run.id), { a: 'retrying', b: 'ready' });
      });

      // Without and with the claim's task (EndRequest.claimed, the worker session's path).
      const claimedOf = (c: Claim) => ({ id: c.task.id, retry: c.task.retry, retriesUsed: c.task.retriesUsed, lostCount: c.task.lostCount, dagRunId: c.task.dagRunId, attempt: c.attempt.number });
      const exitOf = (c: Claim, withClaimed: boolean, end: ReturnType<typeof endInput> & { outputs?: Record<string, string> } = endInput('succeeded')) => ({
        attemptId: c.attempt.id,
        fencingToken: c.attempt.fencingToken,
        end,
        actor: 'worker:w1',
        guard: { workerId: 'w1' },
        ...(withClaimed ? { claimed: claimedOf(c) } : {}),
      });

      for (const withClaimed of [false, true]) {
        it(`ends and claims in one call: the claim takes the steps the ends released${withClaimed ? ' (ends carrying their claimed tasks)' : ''}`, async () => {
          const dag = await apply(definition([step('a'), step('b', ['a']), step('c', ['a'])]));
          const { run } = await start(dag);
          const a = (await claimAll(T0 + 20)).get('a')!;
          const r = await h.store.endAndClaim([exitOf(a, withClaimed)], { worker, max: 5, leaseMs: LEASE }, T0 + 30);
          assert.ok(r.ended[0]);
          assert.equal(r.ended[0].task.state, 'succeeded');
          assert.deepEqual(r.claims.map((c) => c.task.dagStep).sort(), ['b', 'c']);
          assert.deepEqual(await stateOf(run.id), { a: 'succeeded', b: 'running', c: 'running' });
        });
      }

      it('an end carrying its claimed task passes the step\'s outputs to its dependents, and a refused one releases nothing', async () => {
        const dag = await apply(definition([step('extract'), step('count'), step('load-data', ['extract', 'count'])]));
        const { run, steps } = await start(dag);
        const roots = await claimAll(T0 + 20);
        const forged = { ...exitOf(roots.get('count')!, true), fencingToken: GUESSED_TOKEN };
        const r = await h.store.endAndClaim([exitOf(roots.get('extract')!, true, { ...endInput('succeeded'), outputs: { rows: '42' } }), forged], null, T0 + 30);
        assert.deepEqual(r.ended.map((e) => e?.task.state ?? null), ['succeeded', null]);
        assert.deepEqual(await stateOf(run.id), { extract: 'succeeded', count: 'running', 'load-data': 'ready' });
        await h.store.endAndClaim([exitOf(roots.get('count')!, true)], null, T0 + 31);
        const load = (await h.store.getTask(steps.get('load-data')!.taskId))!;
        assert.equal(load.state, 'waiting');
        assert.equal(load.env.DROVER_OUT_EXTRACT_ROWS, '42');
      });

      /*
       * Found by test/faults/dag-failover.test.ts on PostgreSQL: an end's
       * transaction takes its `now`, then waits for the run's row while
       * another server's end commits with a later `now`; the join it then
       * released was dated 13 ms before its dependencies' ends, and its
       * attempt (claimed in the same transaction) started before them too.
       * Here the caller's clocks are given out of order the same way.
       */
      for (const withClaimed of [false, true]) {
        it(`dates a run's progress no earlier than the step ends it follows from, whatever the caller's clock said${withClaimed ? ' (ends carrying their claimed tasks)' : ''}`, async () => {
          const dag = await apply(definition([step('a'), step('b', ['a']), step('c', ['a']), step('d', ['b', 'c'])]));
          const { run } = await start(dag);
          await end((await claimAll(T0 + 20)).get('a')!, 'succeeded', T0 + 30);
          const bc = await claimAll(T0 + 40);
          await end(bc.get('b')!, 'succeeded', T0 + 100);
          const c = bc.get('c')!;
          const r = await h.store.endAndClaim([exitOf(c, withClaimed)], { worker, max: 5, leaseMs: LEASE }, T0 + 60);
          const steps = new Map((await h.store.dagRunSteps(run.id)).map((s) => [s.step, s]));
          assert.deepEqual([steps.get('c')!.endedAt, steps.get('d')!.releasedAt], [T0 + 60, T0 + 100], 'c\'s own end keeps its time; d is released when the later of b and c ended');
          const released = (await h.store.listEvents(steps.get('d')!.taskId)).find((e) => e.reason === 'released')!;
          assert.equal(released.at, T0 + 100);
          assert.deepEqual(r.claims.map((x) => [x.task.dagStep, x.attempt.startedAt]), [['d', T0 + 100]], 'claimed after its release, in the same transaction');

          const roots = await apply(definition([step('x'), step('y')], 'roots'));
          const both = await start(roots, {}, T0 + 200);
          const xy = await claimAll(T0 + 210);
          await end(xy.get('x')!, 'succeeded', T0 + 300);
          await end(xy.get('y')!, 'succeeded', T0 + 250);
          assert.equal((await h.store.getDagRun(both.run.id))!.endedAt, T0 + 300, 'a run ends no earlier than its last step to end');
        });
      }

      it('cancelling one pending step decides its dependents at once', async () => {
        const dag = await apply(definition([step('a'), step('b', ['a']), step('c', ['b']), step('report', ['b'], 'always')]));
        const { run, steps } = await start(dag);
        await h.store.cancelTask(steps.get('b')!.taskId, 'user:alice', T0 + 20);
        assert.deepEqual(await stateOf(run.id), { a: 'waiting', b: 'cancelled', c: 'skipped:upstream_failed', report: 'waiting' });
        const ready = await claimAll(T0 + 30);
        assert.deepEqual([...ready.keys()].sort(), ['a', 'report']);
        await end(ready.get('a')!, 'succeeded', T0 + 40);
        await end(ready.get('report')!, 'succeeded', T0 + 60);
        assert.equal((await h.store.getDagRun(run.id))!.state, 'failed', 'a cancelled step fails the run');
      });

      it('refuses a retry of one step\'s task: the run is retried instead', async () => {
        const dag = await apply(definition([step('a')]));
        const { steps } = await start(dag);
        await end((await claimAll(T0 + 20)).get('a')!, 'failed', T0 + 30);
        await assert.rejects(h.store.retryTask(steps.get('a')!.taskId, 'user:alice', T0 + 40), (e: unknown) => e instanceof ConflictError && /retry the run instead/.test(e.message));
      });

      it('lists runs newest first, all or of one DAG', async () => {
        const etl = await apply(DIAMOND());
        const other = await apply(definition([step('x')], 'other'), 'alice', T0 + 1);
        const r1 = (await start(etl, {}, T0 + 10)).run;
        const r2 = (await start(other, {}, T0 + 11)).run;
        const r3 = (await start(etl, {}, T0 + 12)).run;
        assert.deepEqual((await h.store.listDagRuns({ limit: 10 })).runs.map((r) => r.id), [r3.id, r2.id, r1.id]);
        const page = await h.store.listDagRuns({ dagId: etl.id, limit: 1 });
        assert.deepEqual(page.runs.map((r) => r.id), [r3.id]);
        assert.deepEqual((await h.store.listDagRuns({ dagId: etl.id, limit: 5, cursor: page.nextCursor! })).runs.map((r) => r.id), [r1.id]);
        assert.deepEqual((await h.store.listDagRuns({ owner: 'bob', limit: 5 })).runs, []);
      });

      it('finds runs by an id prefix (one key range), with the other filters', async () => {
        const etl = await apply(DIAMOND());
        const other = await apply(definition([step('x')], 'other'), 'alice', T0 + 1);
        // Runs made in one millisecond share all but the last characters of their ids (monotonic ULIDs).
        const r1 = (await start(etl, {}, T0 + 10)).run;
        const r2 = (await start(other, {}, T0 + 10)).run;
        const r3 = (await start(etl, {}, T0 + 20)).run;
        const all = [r3.id, r2.id, r1.id].sort().reverse();
        const matching = (p: string, keep: (id: string) => boolean = () => true) => all.filter((id) => id.startsWith(p) && keep(id));
        const common = [...r1.id].findIndex((ch, i) => ch !== r2.id[i]);
        assert.ok(common >= 20, `${r1.id} / ${r2.id}`);
        const ids = async (f: { idPrefix: string; dagId?: string; owner?: string }) => (await h.store.listDagRuns({ ...f, limit: 10 })).runs.map((r) => r.id);
        assert.deepEqual(await ids({ idPrefix: r1.id }), [r1.id]);
        assert.deepEqual(await ids({ idPrefix: r2.id }), [r2.id]);
        const p = r1.id.slice(0, common);
        assert.ok(matching(p).length >= 2);
        assert.deepEqual(await ids({ idPrefix: p }), matching(p));
        assert.deepEqual(await ids({ idPrefix: p, dagId: other.id }), [r2.id]);
        assert.deepEqual(await ids({ idPrefix: p, dagId: etl.id }), matching(p, (id) => id !== r2.id));
        assert.deepEqual(await ids({ idPrefix: p, owner: 'bob' }), []);
        assert.deepEqual(await ids({ idPrefix: r1.id.slice(0, 6) }), matching(r1.id.slice(0, 6)));
        assert.deepEqual(await ids({ idPrefix: 'ZZZZZZ' }), []);
        // A step's task id shares the run's prefix, but only runs are listed.
        const steps = await h.store.dagRunSteps(r1.id);
        assert.deepEqual(await ids({ idPrefix: steps[0]!.taskId }), []);
        await assert.rejects(h.store.listDagRuns({ idPrefix: 'abc', limit: 5 }), (e: unknown) => e instanceof InvalidInputError && e.field === 'id');
      });

      it('counts each run\'s steps by state in one read', async () => {
        const etl = await apply(DIAMOND());
        const { run: r1 } = await start(etl, {}, T0 + 10);
        const { run: r2 } = await start(etl, {}, T0 + 11);
        const claims = await h.store.claimMany(worker, 100, T0 + 20, LEASE);
        await end(claims.find((c) => c.task.dagRunId === r1.id)!, 'succeeded', T0 + 30);
        const counts = await h.store.dagRunStepCounts([r1.id, r2.id, '01ARZ3NDEKTSV4RRFFQ69G5FAV']);
        // r1: a succeeded, b and c released, d pending, cleanup (when: failure) skipped; r2: a running, the rest pending.
        assert.deepEqual(counts.get(r1.id), { succeeded: 1, waiting: 2, ready: 1, skipped: 1 });
        assert.deepEqual(counts.get(r2.id), { running: 1, ready: 4 });
        assert.equal(counts.has('01ARZ3NDEKTSV4RRFFQ69G5FAV'), false);
        assert.deepEqual(await h.store.dagRunStepCounts([]), new Map());
      });
    });

    describe('cancel and retry of a run', () => {
      it('cancel stops running steps, cancels pending ones and ends the run; a late end changes nothing more', async () => {
        const dag = await apply(DIAMOND());
        const { run } = await start(dag);
        const a = (await claimAll(T0 + 20)).get('a')!;
        const c = await h.store.cancelDagRun(run.id, 'user:alice', T0 + 30);
        assert.ok(c);
        assert.equal(c.run.state, 'cancelled');
        assert.deepEqual(c.stopped.map((x) => x.id), [a.attempt.id]);
        assert.equal((await h.store.getAttempt(a.attempt.id))!.stopReason, 'task cancelled');
        assert.deepEqual(await stateOf(run.id), { a: 'cancelled', b: 'cancelled', c: 'cancelled', d: 'cancelled', cleanup: 'cancelled' });
        await end(a, 'succeeded', T0 + 40);
        assert.deepEqual(await stateOf(run.id), { a: 'cancelled', b: 'cancelled', c: 'cancelled', d: 'cancelled', cleanup: 'cancelled' });
        assert.equal((await h.store.getDagRun(run.id))!.state, 'cancelled');
        await assert.rejects(h.store.cancelDagRun(run.id, 'user:alice', T0 + 50), ConflictError);
        assert.equal(await h.store.cancelDagRun('01ARZ3NDEKTSV4RRFFQ69G5FAV', 'user:alice', T0 + 50), null);
      });

      it('retry re-runs the failed step and those skipped because of it, keeping what succeeded', async () => {
        const dag = await apply(definition([step('a'), step('b', ['a']), step('c', ['b']), step('side', ['a']), step('alert', ['b'], 'failure')]));
        const { run } = await start(dag);
        await end((await claimAll(T0 + 20)).get('a')!, 'succeeded', T0 + 30);
        const bs = await claimAll(T0 + 40);
        await end(bs.get('side')!, 'succeeded', T0 + 50);
        await end(bs.get('b')!, 'failed', T0 + 60);
        await end((await claimAll(T0 + 70)).get('alert')!, 'succeeded', T0 + 80);
        assert.deepEqual(await stateOf(run.id), { a: 'succeeded', b: 'failed', c: 'skipped:upstream_failed', side: 'succeeded', alert: 'succeeded' });
        assert.equal((await h.store.getDagRun(run.id))!.state, 'failed');

        const again = await h.store.retryDagRun(run.id, 'user:alice', T0 + 90);
        assert.deepEqual([again!.state, again!.endedAt], ['running', null]);
        assert.deepEqual(await stateOf(run.id), { a: 'succeeded', b: 'waiting', c: 'ready', side: 'succeeded', alert: 'succeeded' });
        const bId = (await h.store.dagRunSteps(run.id)).find((s) => s.step === 'b')!.taskId;
        const b = (await h.store.getTask(bId))!;
        assert.deepEqual([b.retriesUsed, b.result], [0, null]);
        assert.deepEqual((await h.store.listEvents(bId)).slice(-2).map((e) => [e.from, e.to, e.reason]), [['failed', 'ready', 'manual_retry'], ['ready', 'waiting', 'released']]);
        await assert.rejects(h.store.retryDagRun(run.id, 'user:alice', T0 + 95), (e: unknown) => e instanceof ConflictError && /still running/.test(e.message));

        await end((await claimAll(T0 + 100)).get('b')!, 'succeeded', T0 + 110);
        await end((await claimAll(T0 + 120)).get('c')!, 'succeeded', T0 + 130);
        assert.equal((await h.store.getDagRun(run.id))!.state, 'succeeded');
        const steps = await h.store.dagRunSteps(run.id);
        assert.deepEqual(steps.find((s) => s.step === 'b')!.startedAt, T0 + 100, 'the step reports its new run-through');
      });

      it('refuses a retry while a cancelled step\'s attempt is still stopping', async () => {
        const dag = await apply(definition([step('a')]));
        const { run } = await start(dag);
        const a = (await claimAll(T0 + 20)).get('a')!;
        await h.store.cancelDagRun(run.id, 'user:alice', T0 + 30);
        await assert.rejects(h.store.retryDagRun(run.id, 'user:alice', T0 + 40), (e: unknown) => e instanceof ConflictError && /still has a running attempt/.test(e.message));
        await end(a, 'failed', T0 + 50);
        assert.equal((await h.store.retryDagRun(run.id, 'user:alice', T0 + 60))!.state, 'running');
        assert.deepEqual(await stateOf(run.id), { a: 'waiting' });
      });
    });

    describe('large graphs', () => {
      it('starts a 1,000-step fan-out in one transaction and releases the fan-in once, after the last branch', async () => {
        const mid = Array.from({ length: 998 }, (_, i) => step(`m${i}`, ['start']));
        const dag = await apply(definition([step('start'), ...mid, step('end', mid.map((m) => m.name))], 'wide'));
        const { run } = await start(dag);
        // Each step's task is its own across the whole run (SQLite inserts the steps 128 to a statement).
        const steps = await h.store.dagRunSteps(run.id);
        assert.equal(steps.length, 1000);
        for (const s of steps.filter((_, i) => i % 97 === 0 || i >= 998)) {
          const t = (await h.store.getTask(s.taskId))!;
          assert.deepEqual([t.name, t.dagStep, t.args, t.env.STEP], [`dag/${s.step}`, s.step, [s.step], s.step]);
          assert.deepEqual((await h.store.listEvents(s.taskId))[0]!.detail, { dag: { run: run.id, name: 'wide', version: 1, step: s.step } });
        }
        await end((await claimAll(T0 + 20)).get('start')!, 'succeeded', T0 + 30);
        let now = T0 + 40;
        let claimed = 0;
        for (;;) {
          const batch = await h.store.claimMany(worker, 100, now++, LEASE);
          if (batch.length === 0) break;
          for (const c of batch) if (c.task.dagStep === 'end') assert.equal(claimed, 998, 'end waits for every branch');
          claimed += batch.length;
          await h.store.endAttempts(
            batch.map((c) => ({ attemptId: c.attempt.id, fencingToken: c.attempt.fencingToken, end: endInput('succeeded'), actor: 'worker:w1', guard: { workerId: 'w1' } })),
            now++,
          );
        }
        assert.equal(claimed, 998 + 1, 'the branches, then end');
        assert.equal((await h.store.getDagRun(run.id))!.state, 'succeeded');
        const endStep = (await h.store.dagRunSteps(run.id)).find((s) => s.step === 'end')!;
        assert.equal((await h.store.listEvents(endStep.taskId)).filter((e) => e.reason === 'released').length, 1);
      });
    });

    raceBetweenServers(hooks, 'two servers ending both branches of a diamond at once release the join exactly once', async (sibling) => {
      const other = await sibling(h.store);
      try {
        const dag = await apply(definition([step('a'), step('b', ['a']), step('c', ['a']), step('d', ['b', 'c'])]));
        for (let round = 0; round < 5; round++) {
          const { run } = await start(dag, {}, T0 + 1000 * round);
          await end((await claimAll(T0 + 1000 * round + 1)).get('a')!, 'succeeded', T0 + 1000 * round + 2);
          const bc = await claimAll(T0 + 1000 * round + 3);
          await Promise.all([end(bc.get('b')!, 'succeeded', T0 + 1000 * round + 4), end(bc.get('c')!, 'succeeded', T0 + 1000 * round + 4, other)]);
          assert.equal((await stateOf(run.id)).d, 'waiting', `round ${round}`);
          const dId = (await h.store.dagRunSteps(run.id)).find((s) => s.step === 'd')!.taskId;
          assert.equal((await h.store.listEvents(dId)).filter((e) => e.reason === 'released').length, 1);
          await end((await claimAll(T0 + 1000 * round + 5)).get('d')!, 'succeeded', T0 + 1000 * round + 6);
        }
      } finally {
        await other.close();
      }
    });
  });
}
