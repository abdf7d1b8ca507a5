/**
 * The cron firing loop with DAG schedules (`drover cron add --dag NAME`),
 * against a real in-memory SQLite store and a fake clock: each slot starts a
 * DAG run; overlap forbid and replace act on the schedule's running DAG runs
 * (a slot's or a run-now one); a slot whose run cannot start is recorded as
 * skipped and logged with the reason.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { FakeClock } from '../../src/core/clock.js';
import { newTaskId } from '../../src/core/ids.js';
import type { DagDefinition } from '../../src/core/dag/dag-definition.js';
import { firstFireAfter } from '../../src/core/cron/next-fire.js';
import { parseSchedule } from '../../src/core/cron/schedule.js';
import { CronService } from '../../src/server/cron-service.js';
import { runScheduleNow } from '../../src/server/schedule-run-now.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { DagRunRecord, ScheduleRecord, ScheduleSpec, Store } from '../../src/store/store.js';
import { makeSpec } from '../store/contract.js';

const quiet = { info() {}, warn() {}, error() {} };
const SEC = 1000;
const MIN = 60 * SEC;
/** 2026-01-01T00:00:00Z */
const T0 = Date.UTC(2026, 0, 1);
const iso = (t: number) => new Date(t).toISOString();

const DEF: DagDefinition = {
  name: 'etl',
  description: null,
  params: { DAY: 'today' },
  steps: [
    { name: 'extract', dependsOn: [], when: 'success', task: makeSpec({ name: 'extract', command: 'true' }) },
    { name: 'load', dependsOn: ['extract'], when: 'success', task: makeSpec({ name: 'load', command: 'true' }) },
  ],
};

describe('cron service: DAG schedules (fake clock, SQLite)', () => {
  let store: Store;
  let clock: FakeClock;
  let cron: CronService;
  let warnings: Array<{ obj: Record<string, unknown>; msg?: string }>;
  beforeEach(async () => {
    store = openSqliteStore(':memory:');
    await store.migrate();
    clock = new FakeClock(T0);
    warnings = [];
    cron = new CronService(store, clock, { ...quiet, warn: (obj, msg) => void warnings.push({ obj: obj as Record<string, unknown>, msg }) }, { holder: 's1' });
    await store.applyDag(newTaskId(T0), 'u', DEF, createHash('sha256').update(JSON.stringify(DEF)).digest('hex'), T0);
  });
  afterEach(async () => {
    cron.stop();
    await cron.whenIdle();
    await store.close();
  });

  async function add(name: string, o: Partial<ScheduleSpec> = {}): Promise<ScheduleRecord> {
    const s = parseSchedule({ expr: '* * * * *', tz: 'UTC' });
    const spec: ScheduleSpec = { name, expr: s.expr, tz: s.tz, overlap: 'allow', catchup: 'latest', maxCatchup: 10, template: null, dag: { name: 'etl', params: { DAY: 'monday' } }, ...o };
    return store.createSchedule(newTaskId(clock.now()), 'u', spec, clock.now(), firstFireAfter(s, clock.now()));
  }
  /** The schedule's DAG runs, oldest first. */
  const runsOf = async (s: ScheduleRecord): Promise<DagRunRecord[]> => (await store.listDagRuns({ limit: 100 })).runs.filter((r) => r.scheduleId === s.id).reverse();
  const recordsOf = async (s: ScheduleRecord) => (await store.scheduleRuns(s.id, 100)).reverse().map((r) => `${iso(r.slotAt)} ${r.outcome}${r.reason ? ` ${r.reason}` : ''}${r.dagRunId ? ' run' : ''}`);
  const at = async (t: number) => {
    clock.set(t);
    await cron.tick();
  };

  it('each slot starts one run of the DAG with the schedule\'s parameters, at its time', async () => {
    const s = await add('nightly');
    await at(T0 + 30 * SEC);
    assert.deepEqual(await runsOf(s), []);
    await at(T0 + MIN);
    await at(T0 + MIN + 1);
    const runs = await runsOf(s);
    assert.deepEqual(runs.map((r) => [r.scheduledAt, r.state, r.params.DAY, r.createdAt - r.scheduledAt!]), [[T0 + MIN, 'running', 'monday', 0]]);
    const steps = await store.dagRunSteps(runs[0]!.id);
    assert.deepEqual(steps.map((x) => [x.step, x.state]), [['extract', 'waiting'], ['load', 'ready']]);
    await at(T0 + 2 * MIN);
    assert.deepEqual((await runsOf(s)).map((r) => iso(r.scheduledAt!)), [iso(T0 + MIN), iso(T0 + 2 * MIN)]);
    assert.deepEqual(await recordsOf(s), [`${iso(T0 + MIN)} fired run`, `${iso(T0 + 2 * MIN)} fired run`]);
    assert.equal(cron.stats.fired, 2);
  });

  it('overlap forbid skips slots while a run of the DAG is running, and fires again once it ended', async () => {
    const s = await add('forbid', { overlap: 'forbid' });
    await at(T0 + MIN);
    await at(T0 + 2 * MIN);
    assert.deepEqual(await recordsOf(s), [`${iso(T0 + MIN)} fired run`, `${iso(T0 + 2 * MIN)} skipped overlap_forbid`]);
    await store.cancelDagRun((await runsOf(s))[0]!.id, 'user:u', clock.now());
    await at(T0 + 3 * MIN);
    assert.deepEqual((await runsOf(s)).map((r) => [iso(r.scheduledAt!), r.state]), [
      [iso(T0 + MIN), 'cancelled'],
      [iso(T0 + 3 * MIN), 'running'],
    ]);
  });

  it('overlap forbid sees a run started by "run now"', async () => {
    const s = await add('forbid-manual', { overlap: 'forbid' });
    const made = await runScheduleNow(store, s, 'user:u', T0 + 10 * SEC);
    assert.ok('run' in made);
    assert.deepEqual([made.run.scheduleId, made.run.scheduledAt, made.run.state], [s.id, null, 'running']);
    await at(T0 + MIN);
    assert.deepEqual(await recordsOf(s), [`${iso(T0 + MIN)} skipped overlap_forbid`]);
  });

  it('overlap replace cancels the running run (its steps too) before starting the new one', async () => {
    const s = await add('replace', { overlap: 'replace' });
    await at(T0 + MIN);
    const [first] = await runsOf(s);
    await at(T0 + 2 * MIN);
    const runs = await runsOf(s);
    assert.deepEqual(runs.map((r) => [r.id === first!.id, r.state]), [
      [true, 'cancelled'],
      [false, 'running'],
    ]);
    assert.deepEqual((await store.dagRunSteps(first!.id)).map((x) => x.state), ['cancelled', 'cancelled']);
    assert.deepEqual((await store.activeScheduleRuns([s.id], 10)).map((a) => a.dagRunId), [runs[1]!.id]);
  });

  it('a slot whose run cannot start (a new version refuses the parameters) is a skipped run, logged with the reason', async () => {
    const s = await add('bad-params');
    const v2: DagDefinition = { ...DEF, params: { DATE: 'x' } };
    await store.applyDag(newTaskId(T0), 'u', v2, createHash('sha256').update(JSON.stringify(v2)).digest('hex'), T0 + 1);
    await at(T0 + MIN);
    assert.deepEqual(await runsOf(s), []);
    assert.deepEqual(await recordsOf(s), [`${iso(T0 + MIN)} skipped dag_params_invalid`]);
    const w = warnings.find((x) => x.obj.reason === 'dag_params_invalid');
    assert.ok(w, JSON.stringify(warnings));
    assert.match(String(w.obj.detail), /DAY/);
    assert.equal((await store.getSchedule(s.id))!.nextFireAt, T0 + 2 * MIN, 'the schedule goes on');
  });
});
