/**
 * Store contract, issues 11 and 12: cron schedules of DAGs (store/schedules.ts
 * ScheduleSpec.dag, store/schedule-dag-runs.ts). A DAG schedule's slot starts
 * one DAG run inside the firing transaction, one per slot however often the
 * firing is repeated; a slot that cannot start a run is recorded as skipped
 * with the reason; the overlap policies see its running runs.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { newTaskId } from '../../src/core/ids.js';
import type { DagDefinition, DagStepSpec } from '../../src/core/dag/dag-definition.js';
import { CRON_ACTOR } from '../../src/store/schedules.js';
import type { DagRecord, FireRequest, FireResult, ScheduleRecord, ScheduleSpec } from '../../src/store/store.js';
import { Harness, makeSpec, T0, type ContractHooks, type Opened } from './contract-harness.js';
import { fireRequest, LEADER, MIN } from './contract-schedules.js';


function step(name: string, dependsOn: string[] = []): DagStepSpec {
  return { name, dependsOn, when: 'success', task: makeSpec({ name: `dag/${name}`, command: 'true', args: [name] }) };
}

function definition(steps: DagStepSpec[], params: Record<string, string> | null = null, name = 'etl'): DagDefinition {
  return { name, description: null, params, steps };
}

const hashOf = (d: DagDefinition) => createHash('sha256').update(JSON.stringify(d)).digest('hex');

export function runScheduleDagContract(name: string, open: Opened, hooks: ContractHooks = {}): void {
  describe(`Store contract, DAG schedules: ${name}`, () => {
    const h = Harness.use(open, hooks);

    const apply = async (def: DagDefinition, owner = 'alice', now = T0): Promise<DagRecord> => (await h.store.applyDag(newTaskId(now), owner, def, hashOf(def), now)).dag;

    const create = (o: Partial<ScheduleSpec> = {}, owner = 'alice') =>
      h.store.createSchedule(
        newTaskId(T0),
        owner,
        { name: 'nightly-etl', expr: '* * * * *', tz: 'UTC', overlap: 'allow', catchup: 'latest', maxCatchup: 10, template: null, dag: { name: 'etl', params: {} }, ...o },
        T0,
        T0 + MIN,
      );

    async function lead(): Promise<number> {
      const epoch = await h.store.acquireLeadershipEpoch(LEADER, 'server-a', T0, 3_600_000);
      assert.ok(epoch !== null);
      return epoch;
    }

    /** Fired a minute and 5 s after T0. */
    const fireReq = (s: ScheduleRecord, epoch: number, slots: number[], o: Partial<FireRequest> = {}): FireRequest => fireRequest(s, epoch, slots, { now: T0 + MIN + 5, ...o });

    const ok = (r: FireResult) => {
      assert.ok(r.ok, JSON.stringify(r));
      return r;
    };

    it('round-trips a DAG schedule: template null, the DAG and its parameters', async () => {
      await apply(definition([step('a')]));
      const s = await create({ dag: { name: 'etl', params: { DAY: 'today' } } });
      assert.equal(s.template, null);
      assert.deepEqual(s.dag, { name: 'etl', params: { DAY: 'today' } });
      assert.deepEqual(await h.store.getSchedule(s.id), s);
      const task = await h.store.createSchedule(newTaskId(T0), 'alice', { name: 't', expr: '* * * * *', tz: 'UTC', overlap: 'allow', catchup: 'latest', maxCatchup: 10, template: makeSpec() }, T0, null);
      assert.equal(task.dag, null, 'a task schedule has no DAG');
    });

    it('a slot starts one run of the DAG, in the firing: its steps are tasks, the roots released, the run records the slot', async () => {
      const dag = await apply(definition([step('a'), step('b', ['a'])], { DAY: 'default' }));
      const s = await create({ dag: { name: 'etl', params: { DAY: 'monday' } } });
      const slot = T0 + MIN;
      const r = ok(await h.store.fireSchedule(fireReq(s, await lead(), [slot])));
      assert.deepEqual(r.created, [], 'no task of its own');
      assert.equal(r.dagRuns.length, 1);
      assert.deepEqual(r.unstarted, []);
      const run = (await h.store.getDagRun(r.dagRuns[0]!))!;
      assert.deepEqual([run.dagId, run.version, run.state, run.scheduleId, run.scheduledAt, run.owner], [dag.id, 1, 'running', s.id, slot, 'alice']);
      assert.deepEqual(run.params, { DAY: 'monday' });
      const steps = await h.store.dagRunSteps(run.id);
      assert.deepEqual(steps.map((x) => [x.step, x.state]), [['a', 'waiting'], ['b', 'ready']]);
      const a = (await h.store.getTask(steps[0]!.taskId))!;
      assert.equal(a.owner, 'alice');
      assert.equal(a.env.DROVER_PARAM_DAY, 'monday');
      assert.equal((await h.store.listEvents(a.id))[0]!.actor, CRON_ACTOR);
      const runs = await h.store.scheduleRuns(s.id, 10);
      assert.deepEqual(runs.map((x) => [x.slotAt, x.outcome, x.taskId, x.dagRunId, x.dagRunState]), [[slot, 'fired', null, run.id, 'running']]);
      assert.equal((await h.store.getSchedule(s.id))!.lastSlotAt, slot);
    });

    it('one run per slot: the same slot fired again is already fired and starts nothing', async () => {
      await apply(definition([step('a')]));
      const s = await create();
      const epoch = await lead();
      const slot = T0 + MIN;
      ok(await h.store.fireSchedule(fireReq(s, epoch, [slot])));
      const again = ok(await h.store.fireSchedule(fireReq((await h.store.getSchedule(s.id))!, epoch, [slot])));
      assert.deepEqual(again.dagRuns, []);
      assert.deepEqual(again.alreadyFired, [slot]);
      const repeated = ok(await h.store.fireSchedule(fireReq((await h.store.getSchedule(s.id))!, epoch, [slot + MIN, slot + MIN])));
      assert.equal(repeated.dagRuns.length, 1, 'a slot given twice in one firing starts one run');
      assert.deepEqual(repeated.alreadyFired, [slot + MIN]);
      const all = (await h.store.listDagRuns({ limit: 10 })).runs;
      assert.deepEqual(all.map((x) => x.scheduledAt).sort(), [slot, slot + MIN]);
    });

    it('a missing DAG, or parameters its newest version refuses, make the slot a skipped run with the reason; the schedule still advances', async () => {
      const s = await create({ dag: { name: 'etl', params: { NOPE: '1' } } });
      const epoch = await lead();
      const r1 = ok(await h.store.fireSchedule(fireReq(s, epoch, [T0 + MIN])));
      assert.deepEqual(r1.dagRuns, []);
      assert.deepEqual(r1.unstarted.map((u) => [u.slot, u.reason]), [[T0 + MIN, 'dag_missing']]);
      await apply(definition([step('a')], { DAY: 'x' }));
      const r2 = ok(await h.store.fireSchedule(fireReq((await h.store.getSchedule(s.id))!, epoch, [T0 + 2 * MIN])));
      assert.deepEqual(r2.unstarted.map((u) => u.reason), ['dag_params_invalid']);
      assert.match(r2.unstarted[0]!.detail, /NOPE/);
      const runs = await h.store.scheduleRuns(s.id, 10);
      assert.deepEqual(runs.map((x) => [x.slotAt, x.outcome, x.reason, x.dagRunId]), [
        [T0 + 2 * MIN, 'skipped', 'dag_params_invalid', null],
        [T0 + MIN, 'skipped', 'dag_missing', null],
      ]);
      assert.equal((await h.store.getSchedule(s.id))!.lastSlotAt, T0 + 2 * MIN);
      assert.deepEqual((await h.store.listDagRuns({ limit: 10 })).runs, []);
    });

    it('each slot runs the newest version of the DAG at that time; another owner\'s DAG of the same name is not used', async () => {
      await apply(definition([step('other')]), 'bob');
      await apply(definition([step('a')]));
      const s = await create();
      const epoch = await lead();
      const r1 = ok(await h.store.fireSchedule(fireReq(s, epoch, [T0 + MIN])));
      await apply(definition([step('a'), step('z', ['a'])]), 'alice', T0 + 2);
      const r2 = ok(await h.store.fireSchedule(fireReq((await h.store.getSchedule(s.id))!, epoch, [T0 + 2 * MIN])));
      const v = async (id: string) => {
        const run = (await h.store.getDagRun(id))!;
        return [run.owner, run.version, (await h.store.dagRunSteps(id)).map((x) => x.step).join(',')];
      };
      assert.deepEqual(await v(r1.dagRuns[0]!), ['alice', 1, 'a']);
      assert.deepEqual(await v(r2.dagRuns[0]!), ['alice', 2, 'a,z']);
    });

    it('one batch fires a task schedule and a DAG schedule together', async () => {
      await apply(definition([step('a')]));
      const d = await create();
      const t = await h.store.createSchedule(newTaskId(T0), 'alice', { name: 'plain', expr: '* * * * *', tz: 'UTC', overlap: 'allow', catchup: 'latest', maxCatchup: 10, template: makeSpec({ name: 'plain' }) }, T0, T0 + MIN);
      const epoch = await lead();
      const { leader, now, ...fd } = fireReq(d, epoch, [T0 + MIN]);
      const { leader: _l, now: _n, ...ft } = fireReq(t, epoch, [T0 + MIN]);
      const [rd, rt] = (await h.store.fireSchedules({ leader, now, requests: [fd, ft] })).map(ok);
      assert.equal(rd!.dagRuns.length, 1);
      assert.deepEqual(rd!.created, []);
      assert.equal(rt!.created.length, 1);
      assert.deepEqual(rt!.dagRuns, []);
      assert.equal(rt!.created[0]!.scheduleId, t.id);
    });

    it('activeScheduleRuns lists a DAG schedule\'s running runs (slot and run-now ones) until they end', async () => {
      const dag = await apply(definition([step('a')]));
      const s = await create();
      const r = ok(await h.store.fireSchedule(fireReq(s, await lead(), [T0 + MIN])));
      const manual = await h.store.startDagRun({ runId: newTaskId(T0 + 3), dag, params: {}, taskIds: [newTaskId(T0 + 3)], actor: 'user:alice', now: T0 + 3, slot: { scheduleId: s.id, scheduledAt: null } });
      const active = await h.store.activeScheduleRuns([s.id], 10);
      assert.deepEqual(
        active.map((a) => [a.dagRunId, a.taskId, a.state, a.scheduledAt]),
        [
          [r.dagRuns[0], undefined, 'running', T0 + MIN],
          [manual.id, undefined, 'running', null],
        ].sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
      );
      assert.deepEqual((await h.store.activeScheduleRuns([s.id], 1)).length, 1, 'the per-schedule limit holds');
      await h.store.cancelDagRun(r.dagRuns[0]!, CRON_ACTOR, T0 + 4);
      assert.deepEqual((await h.store.activeScheduleRuns([s.id], 10)).map((a) => a.dagRunId), [manual.id]);
      const runs = await h.store.scheduleRuns(s.id, 10);
      assert.equal(runs[0]!.dagRunState, 'cancelled', 'the run record shows the run\'s state now');
    });
  });
}
