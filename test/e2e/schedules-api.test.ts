/**
 * /v1/schedules against a real `drover server` process on SQLite: create
 * (defaults, every validation error naming its field, 409 per owner), list,
 * show (next fire times, recent runs with lateness), pause / resume, run now,
 * delete; users see only their own schedules (others' are 404), admins
 * anyone's; GET /v1/tasks?schedule=NAME lists a schedule's runs;
 * GET /v1/cron/next computes the fire times of an unsaved expression.
 *
 * Firing is the cron service's (not part of this API); where a test needs
 * run records it fires a slot itself through the store's fireSchedule on the
 * server's database file, under a lease of its own name (fireSchedule checks
 * the lease it is given; the server's cron service holds another), for a
 * yearly schedule the service leaves alone during the test.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DroverClient } from '../../src/client/client.js';
import { nextFireTimes } from '../../src/core/cron/next-fire.js';
import { parseSchedule } from '../../src/core/cron/schedule.js';
import { newTaskId } from '../../src/core/ids.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { Api, startCluster, type Cluster } from './harness.js';

const YEARLY = '0 0 1 1 *';

describe('schedules API', () => {
  let c: Cluster;
  let alice: Api;
  let bob: Api;
  before(async () => {
    c = await startCluster({ workers: 0 });
    const token = async (user: string) => {
      const r = await c.api.req('POST', '/v1/tokens', { name: user, role: 'user', user });
      assert.equal(r.status, 201, r.text);
      return new Api(c.url, r.body.secret);
    };
    alice = await token('alice');
    bob = await token('bob');
  });
  after(() => c?.close());

  it('creates a schedule with the documented defaults; nextFireAt is the first fire time after now', async () => {
    const before = Date.now();
    const r = await alice.req('POST', '/v1/schedules', { name: 'every-minute', schedule: '*  * * * *', task: { command: 'echo', args: ['hi'], env: { SECRET: 's3' } } });
    assert.equal(r.status, 201, r.text);
    const s = r.body.schedule;
    assert.match(s.id, /^[0-9A-Z]{26}$/);
    assert.equal(s.name, 'every-minute');
    assert.equal(s.owner, 'alice');
    assert.equal(s.schedule, '* * * * *', 'normalized');
    assert.deepEqual([s.tz, s.overlap, s.catchup, s.maxCatchup, s.paused, s.lastSlotAt], ['UTC', 'allow', 'latest', 10, false, null]);
    const next = Date.parse(s.nextFireAt);
    assert.ok(next > before && next <= Date.now() + 60_000 && next % 60_000 === 0, s.nextFireAt);
    assert.equal(s.task.name, 'every-minute', 'a template without a name is named after the schedule');
    assert.deepEqual([s.task.command, s.task.args, s.task.env, s.task.envRedacted], ['echo', ['hi'], { SECRET: 's3' }, false]);
  });

  it('takes every option; a name is unique per owner (409), not across owners', async () => {
    const body = { name: 'berlin', schedule: '30 2 * * *', tz: 'Europe/Berlin', overlap: 'forbid', catchup: 'all', maxCatchup: 3, task: { name: 'nightly', script: 'echo x', timeout: '5m', retry: { maxRetries: 0 } } };
    const r = await alice.req('POST', '/v1/schedules', body);
    assert.equal(r.status, 201, r.text);
    const s = r.body.schedule;
    assert.deepEqual([s.tz, s.overlap, s.catchup, s.maxCatchup, s.task.name, s.task.script, s.task.timeoutMs, s.task.retry.maxRetries], ['Europe/Berlin', 'forbid', 'all', 3, 'nightly', 'echo x', 300_000, 0]);
    const again = await alice.req('POST', '/v1/schedules', body);
    assert.equal(again.status, 409, again.text);
    assert.match(again.body.error.message, /schedule "berlin" already exists/);
    assert.equal((await bob.req('POST', '/v1/schedules', body)).status, 201);
  });

  it('rejects bad input with 400 naming the field', async () => {
    const ok = { name: 'x', schedule: '* * * * *', task: { command: 'true' } };
    const cases: Array<[string, Record<string, unknown>, string, RegExp?]> = [
      ['bad expression', { schedule: '61 * * * *' }, 'schedule', /minute 61/],
      ['never fires', { schedule: '0 0 30 2 *' }, 'schedule', /never fires/],
      ['unknown zone', { tz: 'Mars/Olympus' }, 'tz', /unknown time zone/],
      ['offset zone', { tz: '+05:00' }, 'tz'],
      ['overlap', { overlap: 'sometimes' }, 'overlap', /allow, forbid, replace/],
      ['catchup', { catchup: 'some' }, 'catchup', /none, latest, all/],
      ['maxCatchup 0', { maxCatchup: 0 }, 'maxCatchup', /1-1000/],
      ['maxCatchup too big', { maxCatchup: 1001 }, 'maxCatchup'],
      ['name with a slash', { name: 'a/b' }, 'name'],
      ['name ..', { name: '..' }, 'name'],
      ['name .', { name: '.' }, 'name'],
      ['name too long', { name: 'n'.repeat(101) }, 'name'],
      ['no command', { task: {} }, 'task.command'],
      ['runAt in the template', { task: { command: 'true', runAt: '2030-01-01T00:00:00Z' } }, 'task.runAt'],
      ['bad timeout', { task: { command: 'true', timeout: 'soon' } }, 'task.timeout'],
      ['relative cwd', { task: { command: 'true', cwd: 'rel' } }, 'task.cwd'],
      ['unknown field', { every: 5 }, 'every'],
      ['no task', { task: undefined }, 'task'],
    ];
    for (const [label, patch, field, reason] of cases) {
      const r = await alice.req('POST', '/v1/schedules', { ...ok, ...patch });
      assert.equal(r.status, 400, `${label}: ${r.text}`);
      assert.equal(r.body.error.field, field, `${label}: ${r.text}`);
      if (reason) assert.match(r.body.error.message, reason, label);
    }
    assert.equal((await alice.req('GET', '/v1/schedules/x')).status, 404, 'nothing was created');
  });

  it('lists: a user their own, an admin everyone\'s or one owner\'s, paged oldest first', async () => {
    const names = async (api: Api, q = '') => {
      const r = await api.req('GET', `/v1/schedules${q}`);
      assert.equal(r.status, 200, r.text);
      return r.body.schedules.map((s: any) => `${s.owner}/${s.name}`);
    };
    assert.deepEqual(await names(alice), ['alice/every-minute', 'alice/berlin']);
    assert.deepEqual(await names(bob), ['bob/berlin']);
    assert.deepEqual(await names(c.api), ['alice/every-minute', 'alice/berlin', 'bob/berlin']);
    assert.deepEqual(await names(c.api, '?owner=bob'), ['bob/berlin']);
    assert.deepEqual(await names(alice, '?owner=alice'), ['alice/every-minute', 'alice/berlin']);
    const other = await alice.req('GET', '/v1/schedules?owner=bob');
    assert.equal(other.status, 400);
    assert.equal(other.body.error.field, 'owner');
    const p1 = await c.api.req('GET', '/v1/schedules?limit=2');
    assert.equal(p1.body.schedules.length, 2);
    assert.ok(p1.body.nextCursor);
    const p2 = await c.api.req('GET', `/v1/schedules?limit=2&cursor=${p1.body.nextCursor}`);
    assert.deepEqual(p2.body.schedules.map((s: any) => `${s.owner}/${s.name}`), ['bob/berlin']);
    assert.equal(p2.body.nextCursor, null);
    assert.equal((await c.api.req('GET', '/v1/schedules?limit=0')).body.error.field, 'limit');
  });

  it('shows a schedule with its next 5 fire times (as the core computes them); others\' schedules are 404; env is redacted for an admin', async () => {
    const r = await alice.req('GET', '/v1/schedules/berlin');
    assert.equal(r.status, 200, r.text);
    const t0 = Date.now();
    const want = nextFireTimes(parseSchedule({ expr: '30 2 * * *', tz: 'Europe/Berlin' }), t0 - 60_000, 6).map((t) => new Date(t).toISOString());
    assert.equal(r.body.next.length, 5);
    assert.ok(want.join().includes(r.body.next.join()), `${r.body.next} within ${want}`);
    assert.deepEqual(r.body.runs, []);
    assert.equal(r.body.schedule.owner, 'alice');
    // bob has a "berlin" of his own: he sees his, never alice's; alice's every-minute is 404 for him.
    assert.equal((await bob.req('GET', '/v1/schedules/berlin')).body.schedule.owner, 'bob');
    const hidden = await bob.req('GET', '/v1/schedules/every-minute');
    assert.equal(hidden.status, 404);
    assert.equal(hidden.body.error.code, 'not_found');
    assert.equal((await bob.req('GET', '/v1/schedules/every-minute?owner=alice')).status, 400);
    // An admin names the owner; the template's env values are the owner's only.
    assert.equal((await c.api.req('GET', '/v1/schedules/every-minute')).status, 404, 'default owner: the admin\'s own');
    const a = await c.api.req('GET', '/v1/schedules/every-minute?owner=alice');
    assert.equal(a.status, 200, a.text);
    assert.deepEqual([a.body.schedule.task.env, a.body.schedule.task.envRedacted], [{ SECRET: '' }, true]);
    assert.equal((await c.api.req('GET', '/v1/schedules/bad%2Fname')).status, 400);
  });

  it('pauses (nextFireAt null) and resumes (first fire time after now); repeating either changes nothing', async () => {
    const p = await alice.req('POST', '/v1/schedules/every-minute/pause');
    assert.equal(p.status, 200, p.text);
    assert.deepEqual([p.body.schedule.paused, p.body.schedule.nextFireAt], [true, null]);
    const again = await alice.req('POST', '/v1/schedules/every-minute/pause');
    assert.deepEqual([again.body.schedule.paused, again.body.schedule.updatedAt], [true, p.body.schedule.updatedAt]);
    assert.equal((await bob.req('POST', '/v1/schedules/every-minute/pause')).status, 404);
    const shown = await alice.req('GET', '/v1/schedules/every-minute');
    assert.equal(shown.body.next.length, 5, 'a paused schedule still shows when it would fire');
    const before = Date.now();
    const r = await alice.req('POST', '/v1/schedules/every-minute/resume');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.schedule.paused, false);
    const next = Date.parse(r.body.schedule.nextFireAt);
    assert.ok(next > before - 1000 && next <= Date.now() + 60_000 && next % 60_000 === 0, r.body.schedule.nextFireAt);
    const r2 = await alice.req('POST', '/v1/schedules/every-minute/resume');
    assert.equal(r2.body.schedule.updatedAt, r.body.schedule.updatedAt);
    // An admin acts on alice's with ?owner=.
    assert.equal((await c.api.req('POST', '/v1/schedules/every-minute/pause?owner=alice')).body.schedule.paused, true);
    assert.equal((await c.api.req('POST', '/v1/schedules/every-minute/resume?owner=alice')).body.schedule.paused, false);
  });

  it('runs now: a task from the template owned by the schedule\'s owner, listed by GET /v1/tasks?schedule=NAME, its event saying manual', async () => {
    // Paused, so that no slot fires during the test (a run now works paused or not); one may have fired before.
    const paused = await alice.req('POST', '/v1/schedules/every-minute/pause');
    assert.equal(paused.status, 200, paused.text);
    const r = await c.api.req('POST', '/v1/schedules/every-minute/run?owner=alice');
    assert.equal(r.status, 201, r.text);
    const task = r.body.task;
    assert.deepEqual([task.owner, task.name, task.command, task.args, task.envRedacted], ['alice', 'every-minute', 'echo', ['hi'], true]);
    const d = await alice.task(task.id);
    assert.deepEqual(d.task.env, { SECRET: 's3' });
    const submitted = d.events.find((e: any) => e.reason === 'submitted');
    assert.deepEqual(submitted.detail, { schedule: 'every-minute', manual: true });
    assert.equal(submitted.actor, 'user:admin');
    const mine = await alice.req('POST', '/v1/schedules/every-minute/run');
    assert.equal(mine.status, 201);
    // Runs of the schedule, newest first; tasks not of it are left out. A slot that fired before the pause
    // added a run with scheduledAt set: only the runs out of schedule are compared.
    await alice.submit({ command: 'true', name: 'every-minute' });
    const manual = (r: { body: any }) => r.body.tasks.filter((t: any) => t.scheduledAt === null).map((t: any) => t.id);
    const list = await alice.req('GET', '/v1/tasks?schedule=every-minute');
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(manual(list), [mine.body.task.id, task.id]);
    const admin = await c.api.req('GET', '/v1/tasks?schedule=every-minute&owner=alice');
    assert.deepEqual(manual(admin), [mine.body.task.id, task.id]);
    assert.equal((await c.api.req('GET', '/v1/tasks?schedule=every-minute')).status, 404, 'the admin\'s own schedule of that name: none');
    assert.equal((await bob.req('GET', '/v1/tasks?schedule=every-minute')).status, 404);
    assert.equal((await bob.req('POST', '/v1/schedules/every-minute/run')).status, 404);
    const bad = await alice.req('GET', '/v1/tasks?schedule=a%20b');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'schedule');
    // A run now takes no slot: the schedule's plan is unchanged.
    assert.equal((await alice.req('GET', '/v1/schedules/every-minute')).body.schedule.lastSlotAt, paused.body.schedule.lastSlotAt);
  });

  it('shows recent runs newest first, fired with their task state and lateness, skipped with the reason (and a catch-up\'s count)', async () => {
    const created = await alice.req('POST', '/v1/schedules', { name: 'yearly', schedule: YEARLY, task: { command: 'true' } });
    assert.equal(created.status, 201, created.text);
    const s = created.body.schedule;
    // Stands in for the cron service: two slots decided through the store on the server's database file.
    const store = openSqliteStore(join(c.dir, 'drover.db'));
    try {
      const now = Date.now();
      const epoch = await store.acquireLeadershipEpoch('schedules-api-test', 'test', now, 60_000);
      assert.ok(epoch !== null);
      const leader = { name: 'schedules-api-test', holder: 'test', epoch };
      const slot1 = Date.parse('2020-01-01T00:00:00Z');
      const slot2 = Date.parse('2021-01-01T00:00:00Z');
      const fired = await store.fireSchedule({
        scheduleId: s.id, leader, expectedLastSlotAt: null, fire: [{ slot: slot2, taskId: newTaskId(now) }], skipped: [{ slot: slot1, reason: 'catchup_capped', catchup: { count: 3, exact: true } }],
        lastSlotAt: slot2, nextFireAt: Date.parse(s.nextFireAt), now: slot2 + 250,
      });
      assert.ok(fired.ok, JSON.stringify(fired));
    } finally {
      store.close();
    }
    const r = await alice.req('GET', '/v1/schedules/yearly');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.schedule.lastSlotAt, '2021-01-01T00:00:00.000Z');
    const [a, b] = r.body.runs;
    assert.equal(r.body.runs.length, 2);
    assert.deepEqual([a.slotAt, a.outcome, a.reason, a.taskState, a.latenessMs, a.catchup], ['2021-01-01T00:00:00.000Z', 'fired', null, 'waiting', 250, null]);
    assert.match(a.taskId, /^[0-9A-Z]{26}$/);
    assert.deepEqual(b, { slotAt: '2020-01-01T00:00:00.000Z', outcome: 'skipped', reason: 'catchup_capped', taskId: null, taskState: null, dagRunId: null, dagRunState: null, latenessMs: null, catchup: { skipped: 3, exact: true } });
    const runs = await alice.req('GET', '/v1/tasks?schedule=yearly');
    assert.deepEqual(runs.body.tasks.map((t: any) => t.id), [a.taskId]);
  });

  it('deletes a schedule (200; then 404); its tasks stay', async () => {
    const tasksBefore = (await alice.req('GET', '/v1/tasks?schedule=every-minute')).body.tasks.map((t: any) => t.id);
    assert.equal((await bob.req('DELETE', '/v1/schedules/every-minute')).status, 404);
    const r = await alice.req('DELETE', '/v1/schedules/every-minute');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.schedule.name, 'every-minute');
    assert.equal((await alice.req('DELETE', '/v1/schedules/every-minute')).status, 404);
    assert.equal((await alice.req('GET', '/v1/schedules/every-minute')).status, 404);
    for (const id of tasksBefore) assert.equal((await alice.req('GET', `/v1/tasks/${id}`)).status, 200);
    // The name is free again.
    assert.equal((await alice.req('POST', '/v1/schedules', { name: 'every-minute', schedule: '@hourly', task: { command: 'true' } })).status, 201);
  });

  it('GET /v1/cron/next: the next fire times of an unsaved expression, as the core computes them; nothing is created', async () => {
    const q = (params: Record<string, string>) => `/v1/cron/next?${new URLSearchParams(params)}`;
    // Daylight saving through the API: 02:30 does not exist in New York on 2026-03-08, so that day fires once at 03:00 EDT.
    const dst = await alice.req('GET', q({ schedule: '30  2 * * *', tz: 'America/New_York', from: '2026-03-07T00:00:00-05:00', count: '3' }));
    assert.equal(dst.status, 200, dst.text);
    assert.deepEqual(dst.body, {
      schedule: '30 2 * * *',
      tz: 'America/New_York',
      next: ['2026-03-07T07:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z'],
    });
    const want = nextFireTimes(parseSchedule({ expr: '30 2 * * *', tz: 'America/New_York' }), Date.parse('2026-03-07T05:00:00Z'), 3).map((t) => new Date(t).toISOString());
    assert.deepEqual(dst.body.next, want, 'the same times the cron service would fire');
    // Defaults: UTC, 5 times, after now. A seconds field counts in seconds.
    const before = Date.now();
    const secs = await c.api.req('GET', q({ schedule: '*/2 * * * * *' }));
    assert.equal(secs.status, 200, secs.text);
    assert.equal(secs.body.tz, 'UTC');
    const times = secs.body.next.map((t: string) => Date.parse(t));
    assert.equal(times.length, 5);
    assert.ok(times[0] > before - 1000 && times[0] <= Date.now() + 2000, secs.body.next[0]);
    for (let i = 1; i < 5; i++) assert.equal(times[i] - times[i - 1], 2000);
    assert.equal((await alice.req('GET', q({ schedule: '@daily', count: '100' }))).body.next.length, 100);
    // The typed client's call: midnight in Shanghai is 16:00 UTC the day before.
    const client = new DroverClient({ url: c.url, token: alice.token });
    assert.deepEqual(await client.cronNext({ schedule: '@daily', tz: 'Asia/Shanghai', from: '2026-01-01T00:00:00Z', count: 2 }), {
      schedule: '@daily',
      tz: 'Asia/Shanghai',
      next: ['2026-01-01T16:00:00.000Z', '2026-01-02T16:00:00.000Z'],
    });
    const listed = await alice.req('GET', '/v1/schedules');
    assert.ok(!listed.body.schedules.some((s: any) => s.schedule === '@daily' || s.schedule === '*/2 * * * * *'), 'nothing was created');
  });

  it('GET /v1/cron/next rejects bad input with 400 naming the field (the same fields as a create body)', async () => {
    const cases: Array<[string, string, string, RegExp?]> = [
      ['no expression', '', 'schedule', /required/],
      ['empty expression', 'schedule=', 'schedule'],
      ['bad expression', 'schedule=61+*+*+*+*', 'schedule', /minute 61 is out of range/],
      ['seven fields', `schedule=${encodeURIComponent('0 0 0 1 1 * 2030')}`, 'schedule'],
      ['never fires', `schedule=${encodeURIComponent('0 0 30 2 *')}`, 'schedule', /never fires/],
      ['unknown zone', 'schedule=@daily&tz=Mars/Olympus', 'tz', /unknown time zone/],
      ['offset zone', `schedule=@daily&tz=${encodeURIComponent('+05:00')}`, 'tz'],
      ['from without a zone', 'schedule=@daily&from=2026-03-08T00:00:00', 'from', /ISO 8601 time with a zone/],
      ['from not a time', 'schedule=@daily&from=tomorrow', 'from'],
      ['count 0', 'schedule=@daily&count=0', 'count'],
      ['count too big', 'schedule=@daily&count=101', 'count'],
      ['count not a number', 'schedule=@daily&count=five', 'count'],
      ['expression too long', `schedule=${'1'.repeat(201)}`, 'schedule'],
      ['unknown parameter', 'schedule=@daily&expr=@daily', 'expr', /unknown field/],
    ];
    for (const [label, query, field, reason] of cases) {
      const r = await alice.req('GET', `/v1/cron/next?${query}`);
      assert.equal(r.status, 400, `${label}: ${r.text}`);
      assert.equal(r.body.error.code, 'invalid_input', label);
      assert.equal(r.body.error.field, field, `${label}: ${r.text}`);
      if (reason) assert.match(r.body.error.message, reason, label);
    }
    assert.equal((await alice.req('GET', '/v1/cron/next?schedule=@daily', undefined, null)).status, 401);
  });

  it('workers may not use the schedule routes', async () => {
    const w = new Api(c.url, c.workerToken);
    assert.equal((await w.req('GET', '/v1/schedules')).status, 403);
    assert.equal((await w.req('POST', '/v1/schedules', { name: 'w', schedule: '@daily', task: { command: 'true' } })).status, 403);
    assert.equal((await w.req('GET', '/v1/cron/next?schedule=@daily')).status, 403);
  });
});
