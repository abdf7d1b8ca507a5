/**
 * Store contract, issue 11: cron schedules (store/schedules.ts) and the
 * leadership epoch they fire under (store/leadership.ts). The unique key on
 * (schedule, slot) is exercised sequentially here on every store, and
 * concurrently from two store handles where the backend has them
 * (ContractHooks.sibling: PostgreSQL). Leases expire only through a negative
 * ttl (contract-harness.ts EXPIRED), never by moving `now`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConflictError, InvalidInputError } from '../../src/core/errors.js';
import { newTaskId } from '../../src/core/ids.js';
import { MAX_ACTIVE_QUERY_SCHEDULES, MAX_FIRE_TASKS, SCHEDULE_RUNS_KEPT, SCHEDULE_RUNS_SLACK } from '../../src/store/schedules.js';
import type { FireRequest, FireResult, ScheduleRecord, ScheduleSpec, Store } from '../../src/store/store.js';
import { EXPIRED, Harness, makeSpec, T0, type ContractHooks, type Opened, raceBetweenServers } from './contract-harness.js';

export const MIN = 60_000;
export const LEADER = 'cron';
const TTL = 60_000;

function scheduleSpec(o: Partial<ScheduleSpec> = {}): ScheduleSpec {
  return {
    name: 'nightly',
    expr: '* * * * *',
    tz: 'UTC',
    overlap: 'allow',
    catchup: 'latest',
    maxCatchup: 10,
    template: makeSpec({ name: 'backup', command: '/usr/bin/backup', args: ['--all'], env: { A: '1' }, labels: { team: 'ops' } }),
    ...o,
  };
}

/** A fire request of `s` for `slots` by the leader `epoch` of server-a (`o` overrides any field); the contract suites' common shape. */
export function fireRequest(s: ScheduleRecord, epoch: number, slots: number[], o: Partial<FireRequest> = {}): FireRequest {
  const last = slots.length > 0 ? Math.max(...slots) : s.lastSlotAt;
  return {
    scheduleId: s.id,
    leader: { name: LEADER, holder: 'server-a', epoch },
    expectedLastSlotAt: s.lastSlotAt,
    fire: slots.map((slot) => ({ slot, taskId: newTaskId(T0 + 1) })),
    skipped: [],
    lastSlotAt: last,
    nextFireAt: (last ?? T0) + MIN,
    now: T0 + 1,
    ...o,
  };
}

export function runScheduleContract(name: string, open: Opened, hooks: ContractHooks = {}): void {
  describe(`Store contract, schedules: ${name}`, () => {
    const h = Harness.use(open, hooks);

    const create = (o: Partial<ScheduleSpec> = {}, owner = 'alice', next: number | null = T0 + MIN, now = T0) =>
      h.store.createSchedule(newTaskId(now), owner, scheduleSpec(o), now, next);

    /** Leads `LEADER` as `holder`; the epoch it fires with. */
    async function lead(holder = 'server-a', store: Store = h.store): Promise<number> {
      const epoch = await store.acquireLeadershipEpoch(LEADER, holder, T0, TTL);
      assert.ok(epoch !== null, `${holder} leads`);
      return epoch;
    }


    /** Every task the schedule made, oldest slot first. */
    async function runsOf(scheduleId: string) {
      const all = (await h.store.listTasks({ limit: 1000 })).tasks.filter((t) => t.scheduleId === scheduleId);
      return all.sort((a, b) => a.scheduledAt! - b.scheduledAt!);
    }

    it('creates, reads by id and by name, and round-trips every field (the template included)', async () => {
      const s = await create();
      assert.equal(s.owner, 'alice');
      assert.equal(s.name, 'nightly');
      assert.equal(s.paused, false);
      assert.equal(s.nextFireAt, T0 + MIN);
      assert.equal(s.lastSlotAt, null);
      assert.equal(s.createdAt, T0);
      assert.equal(s.version, 1);
      assert.deepEqual(s.template, scheduleSpec().template);
      assert.deepEqual(await h.store.getSchedule(s.id), s);
      assert.deepEqual(await h.store.getScheduleByName('alice', 'nightly'), s);
      assert.equal(await h.store.getScheduleByName('bob', 'nightly'), null);
      assert.equal(await h.store.getSchedule('01NOSUCHSCHEDULE0000000000'), null);
    });

    it('a duplicate name for the same owner is a ConflictError naming it; another owner may use it', async () => {
      await create();
      await assert.rejects(create({ expr: '0 * * * *' }), (e: unknown) => e instanceof ConflictError && /"nightly"/.test(e.message));
      const other = await create({}, 'bob');
      assert.equal(other.owner, 'bob');
    });

    it('lists oldest first with a keyset cursor, all owners or one', async () => {
      const made: ScheduleRecord[] = [];
      for (let i = 0; i < 5; i++) made.push(await create({ name: `s${i}` }, i % 2 === 0 ? 'alice' : 'bob', T0 + MIN, T0 + i));
      const p1 = await h.store.listSchedules({ limit: 3 });
      assert.deepEqual(p1.schedules.map((s) => s.name), ['s0', 's1', 's2']);
      assert.ok(p1.nextCursor);
      const p2 = await h.store.listSchedules({ limit: 3, cursor: p1.nextCursor! });
      assert.deepEqual(p2.schedules.map((s) => s.name), ['s3', 's4']);
      assert.equal(p2.nextCursor, null);
      assert.deepEqual((await h.store.listSchedules({ owner: 'alice', limit: 10 })).schedules.map((s) => s.name), ['s0', 's2', 's4']);
      const a1 = await h.store.listSchedules({ owner: 'bob', limit: 1 });
      assert.deepEqual(a1.schedules.map((s) => s.name), ['s1']);
      assert.deepEqual((await h.store.listSchedules({ owner: 'bob', limit: 1, cursor: a1.nextCursor! })).schedules.map((s) => s.name), ['s3']);
    });

    it('pause clears next_fire_at (whatever is passed), resume sets it; both bump the version', async () => {
      const s = await create();
      const p = (await h.store.setPaused(s.id, true, T0 + 5, T0 + 999))!;
      assert.equal(p.paused, true);
      assert.equal(p.nextFireAt, null);
      assert.equal(p.updatedAt, T0 + 5);
      assert.equal(p.version, 2);
      const r = (await h.store.setPaused(s.id, false, T0 + 6, T0 + 2 * MIN))!;
      assert.equal(r.paused, false);
      assert.equal(r.nextFireAt, T0 + 2 * MIN);
      assert.equal(r.version, 3);
      assert.equal(await h.store.setPaused('01NOSUCHSCHEDULE0000000000', true, T0, null), null);
    });

    it('delete removes the schedule and its run records; its tasks stay with their (dangling) schedule id', async () => {
      const s = await create();
      const epoch = await lead();
      const f = await h.store.fireSchedule(fireRequest(s, epoch, [T0 + MIN]));
      assert.ok(f.ok);
      assert.equal(await h.store.deleteSchedule(s.id), true);
      assert.equal(await h.store.getSchedule(s.id), null);
      assert.deepEqual(await h.store.scheduleRuns(s.id, 10), []);
      const t = (await h.store.getTask(f.created[0]!.id))!;
      assert.equal(t.scheduleId, s.id);
      assert.equal(t.scheduledAt, T0 + MIN);
      assert.equal(await h.store.deleteSchedule(s.id), false);
      // The name is free again.
      await create();
    });

    it('dueSchedules: unpaused with next_fire_at <= now, earliest first, limited; nextScheduleDueAt is the earliest', async () => {
      assert.equal(await h.store.nextScheduleDueAt(), null);
      const late = await create({ name: 'late' }, 'alice', T0 + 3 * MIN);
      const early = await create({ name: 'early' }, 'alice', T0 + MIN);
      const mid = await create({ name: 'mid' }, 'bob', T0 + 2 * MIN);
      await create({ name: 'exhausted' }, 'alice', null);
      assert.equal(await h.store.nextScheduleDueAt(), T0 + MIN);
      assert.deepEqual(await h.store.dueSchedules(T0 + MIN - 1, 10), []);
      assert.deepEqual((await h.store.dueSchedules(T0 + 2 * MIN, 10)).map((s) => s.id), [early.id, mid.id]);
      assert.deepEqual((await h.store.dueSchedules(T0 + 10 * MIN, 2)).map((s) => s.id), [early.id, mid.id]);
      await h.store.setPaused(early.id, true, T0, null);
      assert.deepEqual((await h.store.dueSchedules(T0 + 10 * MIN, 10)).map((s) => s.id), [mid.id, late.id]);
      assert.equal(await h.store.nextScheduleDueAt(), T0 + 2 * MIN);
    });

    it('fireSchedule: one waiting task per slot from the template, with schedule and slot, events like a submit, schedule advanced', async () => {
      const s = await create();
      const epoch = await lead();
      const slots = [T0 + MIN, T0 + 2 * MIN];
      const f = await h.store.fireSchedule(fireRequest(s, epoch, slots));
      assert.ok(f.ok);
      assert.deepEqual(f.alreadyFired, []);
      assert.equal(f.created.length, 2);
      for (const [i, t] of f.created.entries()) {
        assert.equal(t.state, 'waiting');
        assert.equal(t.owner, 'alice');
        assert.equal(t.name, 'backup');
        assert.equal(t.command, '/usr/bin/backup');
        assert.deepEqual(t.args, ['--all']);
        assert.deepEqual(t.labels, { team: 'ops' });
        assert.equal(t.scheduleId, s.id);
        assert.equal(t.scheduledAt, slots[i]);
        assert.equal(t.createdAt, T0 + 1);
        assert.deepEqual(await h.store.getTask(t.id), t);
        assert.deepEqual(
          (await h.store.listEvents(t.id)).map((e) => [e.from, e.to, e.reason, e.actor, e.detail]),
          [
            [null, 'ready', 'submitted', 'cron', { schedule: 'nightly', scheduledAt: new Date(slots[i]!).toISOString() }],
            ['ready', 'waiting', 'released', 'cron', null],
          ],
        );
      }
      // Counted like any submit, and claimable.
      assert.equal((await h.store.countTasksByState('alice')).waiting, 2);
      assert.equal((await h.claim(T0 + 2)).task.scheduleId, s.id);
      const after = (await h.store.getSchedule(s.id))!;
      assert.equal(after.lastSlotAt, T0 + 2 * MIN);
      assert.equal(after.nextFireAt, T0 + 3 * MIN);
      assert.equal(after.version, 2);
      assert.equal(after.updatedAt, T0 + 1);
      // An ordinary task has neither field.
      const plain = await h.submit();
      assert.equal(plain.scheduleId, null);
      assert.equal(plain.scheduledAt, null);
      assert.equal((await h.store.getTask(plain.id))!.scheduledAt, null);
    });

    it('the unique key: the same slot fired twice with a correct guard makes one task; the second reports it alreadyFired', async () => {
      const s = await create();
      const epoch = await lead();
      const first = await h.store.fireSchedule(fireRequest(s, epoch, [T0 + MIN]));
      assert.ok(first.ok);
      // A second firer that re-read the schedule (so its guard holds) and planned the same slot again.
      const reread = (await h.store.getSchedule(s.id))!;
      const second = await h.store.fireSchedule(fireRequest(reread, epoch, [T0 + MIN, T0 + 2 * MIN]));
      assert.ok(second.ok);
      assert.deepEqual(second.alreadyFired, [T0 + MIN]);
      assert.deepEqual(second.created.map((t) => t.scheduledAt), [T0 + 2 * MIN]);
      const tasks = await runsOf(s.id);
      assert.deepEqual(tasks.map((t) => t.scheduledAt), [T0 + MIN, T0 + 2 * MIN]);
      assert.equal(tasks[0]!.id, first.created[0]!.id);
      // The refused slot wrote no second event set.
      assert.equal((await h.store.listEvents(first.created[0]!.id)).length, 2);
      // A slot listed twice in one call is inserted once.
      const again = (await h.store.getSchedule(s.id))!;
      const dup = await h.store.fireSchedule(fireRequest(again, epoch, [T0 + 3 * MIN, T0 + 3 * MIN]));
      assert.ok(dup.ok);
      assert.equal(dup.created.length, 1);
      assert.deepEqual(dup.alreadyFired, [T0 + 3 * MIN]);
      assert.equal((await runsOf(s.id)).length, 3);
    });

    it('the stale guard: a last slot other than expected, or a paused or missing schedule, changes nothing', async () => {
      const s = await create();
      const epoch = await lead();
      assert.ok((await h.store.fireSchedule(fireRequest(s, epoch, [T0 + MIN]))).ok);
      // `s` still says lastSlotAt null: a firer planning from an old read.
      const stale = await h.store.fireSchedule(fireRequest(s, epoch, [T0 + 2 * MIN]));
      assert.deepEqual(stale, { ok: false, reason: 'stale' });
      const now = (await h.store.getSchedule(s.id))!;
      assert.equal(now.lastSlotAt, T0 + MIN);
      assert.equal((await runsOf(s.id)).length, 1);
      await h.store.setPaused(s.id, true, T0, null);
      const paused = (await h.store.getSchedule(s.id))!;
      assert.deepEqual(await h.store.fireSchedule(fireRequest(paused, epoch, [T0 + 2 * MIN])), { ok: false, reason: 'stale' });
      assert.deepEqual(await h.store.fireSchedule(fireRequest({ ...paused, id: '01NOSUCHSCHEDULE0000000000' }, epoch, [T0 + 2 * MIN])), { ok: false, reason: 'stale' });
      assert.equal((await runsOf(s.id)).length, 1);
      assert.deepEqual(await h.store.getSchedule(s.id), paused);
    });

    it('the leader guard: a holder whose lease was taken over (epoch moved), or whose lease expired, cannot fire', async () => {
      const s = await create();
      // server-a leads, then its lease expires and server-b takes it over.
      const epochA = await h.store.acquireLeadershipEpoch(LEADER, 'server-a', T0, EXPIRED);
      assert.ok(epochA !== null);
      assert.deepEqual(await h.store.fireSchedule(fireRequest(s, epochA, [T0 + MIN])), { ok: false, reason: 'not_leader' }, 'expired lease');
      const epochB = await h.store.acquireLeadershipEpoch(LEADER, 'server-b', T0, TTL);
      assert.equal(epochB, epochA + 1);
      assert.deepEqual(await h.store.fireSchedule(fireRequest(s, epochA, [T0 + MIN])), { ok: false, reason: 'not_leader' }, 'former leader');
      // The right holder name with the old epoch, or the wrong holder with the new one: still refused.
      assert.deepEqual(
        await h.store.fireSchedule(fireRequest(s, epochA, [T0 + MIN], { leader: { name: LEADER, holder: 'server-b', epoch: epochA } })),
        { ok: false, reason: 'not_leader' },
      );
      assert.deepEqual(await h.store.fireSchedule(fireRequest(s, epochB, [T0 + MIN])), { ok: false, reason: 'not_leader' });
      assert.deepEqual(
        await h.store.fireSchedule(fireRequest(s, epochB, [T0 + MIN], { leader: { name: 'other-duty', holder: 'server-b', epoch: epochB } })),
        { ok: false, reason: 'not_leader' },
      );
      assert.equal((await runsOf(s.id)).length, 0);
      assert.deepEqual(await h.store.getSchedule(s.id), s);
      assert.deepEqual(await h.store.scheduleRuns(s.id, 10), []);
      // The current leader fires.
      const ok = await h.store.fireSchedule(fireRequest(s, epochB, [T0 + MIN], { leader: { name: LEADER, holder: 'server-b', epoch: epochB } }));
      assert.ok(ok.ok);
      assert.equal(ok.created.length, 1);
    });

    it('epochs: 1 when first taken, kept on renewal, +1 on takeover after expiry and on a retake after expiry', async () => {
      assert.equal(await h.store.acquireLeadershipEpoch(LEADER, 'a', T0, TTL), 1);
      assert.equal(await h.store.acquireLeadershipEpoch(LEADER, 'a', T0 + 1, TTL), 1, 'renewal keeps the epoch');
      assert.equal(await h.store.acquireLeadershipEpoch(LEADER, 'b', T0 + 2, TTL), null, 'a live lease is not taken');
      assert.equal(await h.store.acquireLeadership(LEADER, 'a', T0 + 3, EXPIRED), true, 'acquireLeadership still works (and renews)');
      assert.equal(await h.store.acquireLeadershipEpoch(LEADER, 'b', T0 + 4, TTL), 2, 'takeover after expiry');
      assert.equal(await h.store.acquireLeadershipEpoch(LEADER, 'b', T0 + 5, TTL), 2);
      assert.equal(await h.store.acquireLeadershipEpoch(LEADER, 'a', T0 + 6, TTL), null);
      assert.equal(await h.store.acquireLeadership(LEADER, 'a', T0 + 6, TTL), false);
      assert.equal(await h.store.acquireLeadershipEpoch(LEADER, 'b', T0 + 7, EXPIRED), 2, 'a renewal that happens to set a past expiry keeps the epoch');
      assert.equal(await h.store.acquireLeadershipEpoch(LEADER, 'b', T0 + 8, TTL), 3, 'the same holder retaking its expired lease moves the epoch');
      assert.equal(await h.store.acquireLeadershipEpoch('other', 'a', T0, TTL), 1, 'epochs are per lease');
    });

    it('skipped slots are recorded as runs with their reason (and a catch-up\'s count); scheduleRuns is newest first with task id and state', async () => {
      const s = await create({ overlap: 'forbid', catchup: 'all' });
      const epoch = await lead();
      const f = await h.store.fireSchedule(
        fireRequest(s, epoch, [T0 + 3 * MIN], {
          skipped: [
            { slot: T0 + MIN, reason: 'catchup_capped', catchup: { count: 4321, exact: false } },
            { slot: T0 + 2 * MIN, reason: 'overlap_forbid' },
            { slot: T0 + 2 * MIN + 30_000, reason: 'catchup_none', catchup: { count: 1, exact: true } },
          ],
        }),
      );
      assert.ok(f.ok);
      const task = f.created[0]!;
      const runs = await h.store.scheduleRuns(s.id, 10);
      assert.deepEqual(
        runs.map((r) => [r.slotAt, r.outcome, r.reason, r.taskId, r.taskState, r.at, r.scheduleId, r.catchup]),
        [
          [T0 + 3 * MIN, 'fired', null, task.id, 'waiting', T0 + 1, s.id, null],
          [T0 + 2 * MIN + 30_000, 'skipped', 'catchup_none', null, null, T0 + 1, s.id, { count: 1, exact: true }],
          [T0 + 2 * MIN, 'skipped', 'overlap_forbid', null, null, T0 + 1, s.id, null],
          [T0 + MIN, 'skipped', 'catchup_capped', null, null, T0 + 1, s.id, { count: 4321, exact: false }],
        ],
      );
      assert.deepEqual((await h.store.scheduleRuns(s.id, 1)).map((r) => r.slotAt), [T0 + 3 * MIN]);
      // The run shows the task's current state.
      await h.store.cancelTask(task.id, 'user:alice', T0 + 5);
      assert.equal((await h.store.scheduleRuns(s.id, 1))[0]!.taskState, 'cancelled');
      // A skip recorded again (a retried firing) is not doubled, and a fire-only call with no slots just advances.
      const reread = (await h.store.getSchedule(s.id))!;
      const again = await h.store.fireSchedule(fireRequest(reread, epoch, [], { skipped: [{ slot: T0 + 2 * MIN, reason: 'overlap_forbid' }], lastSlotAt: T0 + 4 * MIN, nextFireAt: T0 + 5 * MIN }));
      assert.ok(again.ok);
      assert.deepEqual(again.created, []);
      assert.equal((await h.store.scheduleRuns(s.id, 10)).length, 4);
      assert.equal((await h.store.getSchedule(s.id))!.lastSlotAt, T0 + 4 * MIN);
    });

    /** fireReq's request without the lease and the time (a FireBatch item). */
    function firing(s: ScheduleRecord, slots: number[], o: Partial<FireRequest> = {}) {
      const { leader: _l, now: _n, ...f } = fireRequest(s, 0, slots, o);
      return f;
    }

    it('fireSchedules: each request applied or refused on its own in one call (ok, already fired, stale, paused, missing), tasks owned by their schedule\'s owner', async () => {
      const a = await create({ name: 'a' }, 'alice');
      const b = await create({ name: 'b' }, 'bob');
      const c = await create({ name: 'c' }, 'carol');
      const p = await create({ name: 'p' }, 'alice');
      const epoch = await lead();
      // c already fired its first slot; b's caller planned from an old read; p is paused.
      assert.ok((await h.store.fireSchedule(fireRequest(c, epoch, [T0 + MIN]))).ok);
      const c1 = (await h.store.getSchedule(c.id))!;
      assert.ok((await h.store.fireSchedule(fireRequest(b, epoch, [T0 + MIN]))).ok);
      await h.store.setPaused(p.id, true, T0, null);
      const pPaused = (await h.store.getSchedule(p.id))!;
      const bBefore = (await h.store.getSchedule(b.id))!;
      const results = await h.store.fireSchedules({
        leader: { name: LEADER, holder: 'server-a', epoch },
        now: T0 + 7,
        requests: [
          firing(a, [T0 + MIN], { skipped: [{ slot: T0 + 30_000, reason: 'overlap_forbid' }] }),
          firing(b, [T0 + 2 * MIN]),
          firing(c1, [T0 + MIN, T0 + 2 * MIN]),
          firing(pPaused, [T0 + MIN]),
          firing({ ...a, id: '01NOSUCHSCHEDULE0000000000' }, [T0 + MIN]),
        ],
      });
      assert.equal(results.length, 5);
      const [ra, rb, rc, rp, rm] = results as [FireResult, FireResult, FireResult, FireResult, FireResult];
      assert.ok(ra.ok && rc.ok);
      assert.deepEqual([rb, rp, rm], [{ ok: false, reason: 'stale' }, { ok: false, reason: 'stale' }, { ok: false, reason: 'stale' }]);
      assert.deepEqual(ra.created.map((t) => [t.owner, t.scheduleId, t.scheduledAt, t.createdAt, t.state]), [['alice', a.id, T0 + MIN, T0 + 7, 'waiting']]);
      assert.deepEqual(ra.alreadyFired, []);
      assert.deepEqual(rc.created.map((t) => [t.owner, t.scheduledAt]), [['carol', T0 + 2 * MIN]]);
      assert.deepEqual(rc.alreadyFired, [T0 + MIN]);
      for (const t of [...ra.created, ...rc.created]) {
        assert.deepEqual(await h.store.getTask(t.id), t);
        assert.deepEqual((await h.store.listEvents(t.id)).map((e) => [e.to, e.actor]), [['ready', 'cron'], ['waiting', 'cron']]);
      }
      // Fired schedules advanced, with their run records; the refused ones are untouched.
      const a2 = (await h.store.getSchedule(a.id))!;
      assert.deepEqual([a2.lastSlotAt, a2.nextFireAt, a2.version, a2.updatedAt], [T0 + MIN, T0 + 2 * MIN, 2, T0 + 7]);
      assert.deepEqual(
        (await h.store.scheduleRuns(a.id, 10)).map((r) => [r.slotAt, r.outcome, r.reason, r.at]),
        [
          [T0 + MIN, 'fired', null, T0 + 7],
          [T0 + 30_000, 'skipped', 'overlap_forbid', T0 + 7],
        ],
      );
      assert.equal((await h.store.getSchedule(c.id))!.lastSlotAt, T0 + 2 * MIN);
      assert.deepEqual((await runsOf(c.id)).map((t) => t.scheduledAt), [T0 + MIN, T0 + 2 * MIN]);
      assert.deepEqual(await h.store.getSchedule(b.id), bBefore);
      assert.deepEqual((await runsOf(b.id)).map((t) => t.scheduledAt), [T0 + MIN]);
      assert.deepEqual(await h.store.getSchedule(p.id), pPaused);
      assert.deepEqual(await runsOf(p.id), []);
      assert.equal((await h.store.countTasksByState('alice')).waiting, 1);
      assert.equal((await h.store.countTasksByState('carol')).waiting, 2);
    });

    it('fireSchedules with each schedule as read (ScheduleFiring.schedule): the same guard, the same runs; another schedule\'s record is InvalidInputError', async () => {
      const a = await create({ name: 'a', template: makeSpec({ name: 'from-a', command: 'echo' }) }, 'alice');
      const c = await create({ name: 'c' }, 'carol');
      const p = await create({ name: 'p' }, 'alice');
      const epoch = await lead();
      const leader = { name: LEADER, holder: 'server-a', epoch };
      const cRead = c;
      assert.ok((await h.store.fireSchedule(fireRequest(c, epoch, [T0 + MIN]))).ok, 'c moves on after it was read');
      await h.store.setPaused(p.id, true, T0, null);
      const missing = { ...a, id: '01NOSUCHSCHEDULE0000000000' };
      await assert.rejects(
        h.store.fireSchedules({ leader, now: T0 + 7, requests: [{ ...firing(a, [T0 + MIN]), schedule: c }] }),
        (e: unknown) => e instanceof InvalidInputError && e.field === 'requests' && /must be its own/.test(e.message),
      );
      assert.deepEqual(await runsOf(a.id), []);
      const results = await h.store.fireSchedules({
        leader,
        now: T0 + 7,
        requests: [
          { ...firing(a, [T0 + MIN]), schedule: a },
          { ...firing(cRead, [T0 + MIN]), schedule: cRead },
          { ...firing(p, [T0 + MIN]), schedule: p },
          { ...firing(missing, [T0 + MIN]), schedule: missing },
        ],
      });
      const [ra, rc, rp, rm] = results as [FireResult, FireResult, FireResult, FireResult];
      assert.deepEqual([rc, rp, rm], [{ ok: false, reason: 'stale' }, { ok: false, reason: 'stale' }, { ok: false, reason: 'stale' }]);
      assert.ok(ra.ok);
      assert.deepEqual(ra.created.map((t) => [t.owner, t.name, t.command, t.scheduleId, t.scheduledAt, t.state]), [['alice', 'from-a', 'echo', a.id, T0 + MIN, 'waiting']]);
      assert.deepEqual(await h.store.getTask(ra.created[0]!.id), ra.created[0]);
      const a2 = (await h.store.getSchedule(a.id))!;
      assert.deepEqual([a2.lastSlotAt, a2.nextFireAt, a2.version], [T0 + MIN, T0 + 2 * MIN, 2]);
      assert.deepEqual((await h.store.scheduleRuns(a.id, 10)).map((r) => [r.slotAt, r.outcome]), [[T0 + MIN, 'fired']]);
      assert.deepEqual((await runsOf(c.id)).map((t) => t.scheduledAt), [T0 + MIN], 'the stale request made nothing');
      assert.deepEqual(await runsOf(p.id), []);
    });

    it('fireSchedules: not the leader refuses the whole batch and changes nothing', async () => {
      const a = await create({ name: 'a' });
      const b = await create({ name: 'b' }, 'bob');
      const epochA = await h.store.acquireLeadershipEpoch(LEADER, 'server-a', T0, EXPIRED);
      assert.ok(epochA !== null);
      const epochB = await h.store.acquireLeadershipEpoch(LEADER, 'server-b', T0, TTL);
      assert.ok(epochB !== null);
      const batch = { leader: { name: LEADER, holder: 'server-a', epoch: epochA }, now: T0 + 1, requests: [firing(a, [T0 + MIN]), firing(b, [T0 + MIN], { skipped: [{ slot: T0 + 1000, reason: 'catchup_none' }] })] };
      assert.deepEqual(await h.store.fireSchedules(batch), [{ ok: false, reason: 'not_leader' }, { ok: false, reason: 'not_leader' }]);
      assert.deepEqual(await h.store.fireSchedules({ ...batch, leader: { name: LEADER, holder: 'server-a', epoch: epochB } }), [
        { ok: false, reason: 'not_leader' },
        { ok: false, reason: 'not_leader' },
      ]);
      assert.deepEqual([await runsOf(a.id), await runsOf(b.id)], [[], []]);
      assert.deepEqual([await h.store.scheduleRuns(a.id, 10), await h.store.scheduleRuns(b.id, 10)], [[], []]);
      assert.deepEqual([await h.store.getSchedule(a.id), await h.store.getSchedule(b.id)], [a, b]);
      // The holder of the lease fires the same batch.
      const ok = await h.store.fireSchedules({ ...batch, leader: { name: LEADER, holder: 'server-b', epoch: epochB } });
      assert.ok(ok.every((r) => r.ok));
    });

    it('fireSchedules: an empty or oversized batch, or a schedule given twice, is InvalidInputError naming `requests`; nothing changes', async () => {
      const a = await create({ name: 'a' });
      const epoch = await lead();
      const leader = { name: LEADER, holder: 'server-a', epoch };
      const bad = async (requests: ReturnType<typeof firing>[], why: RegExp) =>
        assert.rejects(h.store.fireSchedules({ leader, now: T0 + 1, requests }), (e: unknown) => e instanceof InvalidInputError && e.field === 'requests' && why.test(e.message));
      await bad([], /1\.\.1000 schedules/);
      await bad([firing(a, [T0 + MIN]), firing(a, [T0 + 2 * MIN])], /given twice/);
      await bad([firing(a, Array.from({ length: MAX_FIRE_TASKS + 1 }, (_, i) => T0 + (i + 1) * MIN))], /at most 1000/);
      assert.deepEqual(await runsOf(a.id), []);
      assert.deepEqual(await h.store.getSchedule(a.id), a);
    });

    it('fireSchedules: one call fires many schedules (one task per slot, one advance each)', async () => {
      const made: ScheduleRecord[] = [];
      for (let i = 0; i < 60; i++) made.push(await create({ name: `m${i}` }, `owner${i % 3}`));
      const epoch = await lead();
      const res = await h.store.fireSchedules({ leader: { name: LEADER, holder: 'server-a', epoch }, now: T0 + 1, requests: made.map((s, i) => firing(s, i % 2 === 0 ? [T0 + MIN] : [T0 + MIN, T0 + 2 * MIN])) });
      assert.equal(res.filter((r) => r.ok).length, 60);
      for (const [i, s] of made.entries()) {
        const tasks = await runsOf(s.id);
        assert.deepEqual(tasks.map((t) => t.scheduledAt), i % 2 === 0 ? [T0 + MIN] : [T0 + MIN, T0 + 2 * MIN]);
        assert.equal(tasks[0]!.owner, `owner${i % 3}`);
        assert.equal((await h.store.getSchedule(s.id))!.lastSlotAt, i % 2 === 0 ? T0 + MIN : T0 + 2 * MIN);
      }
      assert.equal((await h.store.scheduleRuns(made[1]!.id, 10)).length, 2);
    });

    it('activeScheduleRuns: every non-terminal run of each schedule, slot or run-now, oldest first, bounded per schedule', async () => {
      const a = await create({ name: 'a' });
      const b = await create({ name: 'b' }, 'bob');
      const c = await create({ name: 'c' });
      const epoch = await lead();
      const fa = await h.store.fireSchedule(fireRequest(a, epoch, [T0 + MIN, T0 + 2 * MIN]));
      const fb = await h.store.fireSchedule(fireRequest(b, epoch, [T0 + MIN]));
      assert.ok(fa.ok && fb.ok);
      // A run out of schedule (server/schedule-run-now.ts stores it this way): no slot.
      const manual = (await h.store.createTasks('alice', [{ id: newTaskId(T0 + 2), spec: a.template!, slot: { scheduleId: a.id, scheduledAt: null } }], 'user:alice', T0 + 2)).tasks[0]!;
      // b's run ended (cancelled): not active.
      await h.store.cancelTask(fb.created[0]!.id, 'user:bob', T0 + 3);
      // a's first run is running: still active; a plain task is nobody's run.
      const claimed = await h.claim(T0 + 4);
      assert.equal(claimed.task.id, fa.created[0]!.id);
      await h.submit();
      const active = await h.store.activeScheduleRuns([c.id, b.id, a.id, '01NOSUCHSCHEDULE0000000000'], 10);
      assert.deepEqual(
        active.map((r) => [r.scheduleId, r.taskId, r.state, r.scheduledAt]),
        [
          [a.id, fa.created[0]!.id, 'running', T0 + MIN],
          [a.id, fa.created[1]!.id, 'waiting', T0 + 2 * MIN],
          [a.id, manual.id, 'waiting', null],
        ],
      );
      assert.deepEqual((await h.store.activeScheduleRuns([a.id], 2)).map((r) => r.taskId), [fa.created[0]!.id, fa.created[1]!.id], 'at most perSchedule, oldest first');
      // Ended runs leave the set: succeeded, and cancelled.
      await h.end(claimed, 'succeeded', T0 + 5);
      await h.store.cancelTask(manual.id, 'user:alice', T0 + 6);
      assert.deepEqual((await h.store.activeScheduleRuns([a.id, b.id], 10)).map((r) => r.taskId), [fa.created[1]!.id]);
      assert.deepEqual(await h.store.activeScheduleRuns([], 10), []);
    });

    it('activeScheduleRuns: too many ids, or a bad perSchedule, is InvalidInputError naming the field', async () => {
      await assert.rejects(
        h.store.activeScheduleRuns(Array.from({ length: MAX_ACTIVE_QUERY_SCHEDULES + 1 }, (_, i) => `s${i}`), 1),
        (e: unknown) => e instanceof InvalidInputError && e.field === 'scheduleIds',
      );
      for (const bad of [0, -1, 1.5]) {
        await assert.rejects(h.store.activeScheduleRuns(['x'], bad), (e: unknown) => e instanceof InvalidInputError && e.field === 'perSchedule');
      }
    });

    it('pruneScheduleRuns keeps the newest SCHEDULE_RUNS_KEPT records of a schedule once it holds SCHEDULE_RUNS_SLACK more, in bounded batches', async () => {
      const epoch = await lead();
      /** A schedule with `n` run records (skipped slots, one a minute), recorded by one firing. */
      const withRuns = async (name: string, n: number) => {
        const s = await create({ name });
        const slots = Array.from({ length: n }, (_, i) => T0 + (i + 1) * MIN);
        const f = await h.store.fireSchedule(fireRequest(s, epoch, [], { skipped: slots.map((slot) => ({ slot, reason: 'overlap_forbid' })), lastSlotAt: slots[n - 1]!, nextFireAt: T0 + (n + 1) * MIN }));
        assert.ok(f.ok);
        return { s, slots };
      };
      const over = SCHEDULE_RUNS_KEPT + SCHEDULE_RUNS_SLACK;
      const a = await withRuns('a', over + 50);
      const b = await withRuns('b', over); // at the limit, not over it
      const c = await withRuns('c', over + 200);
      const count = async (id: string) => (await h.store.scheduleRuns(id, 5000)).length;
      // A record given again (a retried firing) is not counted twice: b stays at the limit.
      const b1 = (await h.store.getSchedule(b.s.id))!;
      assert.ok((await h.store.fireSchedule(fireRequest(b1, epoch, [], { skipped: [{ slot: b.slots[0]!, reason: 'overlap_forbid' }], lastSlotAt: b1.lastSlotAt }))).ok);

      // One schedule, at most 100 records: a's oldest 100 (of its 150 over SCHEDULE_RUNS_KEPT).
      assert.deepEqual(await h.store.pruneScheduleRuns(1, 100), { schedules: 1, deleted: 100 });
      assert.equal(await count(a.s.id), over - 50);
      assert.equal((await h.store.scheduleRuns(a.s.id, 5000)).at(-1)!.slotAt, a.slots[100], 'the oldest went first');
      // a is back under the limit; c is trimmed to SCHEDULE_RUNS_KEPT exactly; b is left alone.
      assert.deepEqual(await h.store.pruneScheduleRuns(10, 5000), { schedules: 1, deleted: 300 });
      const kept = await h.store.scheduleRuns(c.s.id, 5000);
      assert.equal(kept.length, SCHEDULE_RUNS_KEPT);
      assert.deepEqual([kept[0]!.slotAt, kept.at(-1)!.slotAt], [c.slots.at(-1), c.slots[300]], 'the newest are kept');
      assert.equal(await count(b.s.id), over);
      assert.deepEqual(await h.store.pruneScheduleRuns(10, 5000), { schedules: 0, deleted: 0 });
      // c fires on: counted from what is left, trimmed again once over the limit.
      const c1 = (await h.store.getSchedule(c.s.id))!;
      const more = Array.from({ length: SCHEDULE_RUNS_SLACK + 1 }, (_, i) => c.slots.at(-1)! + (i + 1) * MIN);
      const f = await h.store.fireSchedule(fireRequest(c1, epoch, [more.at(-1)!], { skipped: more.slice(0, -1).map((slot) => ({ slot, reason: 'overlap_forbid' })) }));
      assert.ok(f.ok);
      assert.deepEqual(await h.store.pruneScheduleRuns(10, 5000), { schedules: 1, deleted: SCHEDULE_RUNS_SLACK + 1 });
      const after = await h.store.scheduleRuns(c.s.id, 5000);
      assert.equal(after.length, SCHEDULE_RUNS_KEPT);
      assert.equal(after[0]!.taskId, f.ok ? f.created[0]!.id : null, 'the newest run (fired) is kept with its task');
      // Bad limits name the field.
      for (const [args, field] of [[[0, 1], 'maxSchedules'], [[1, 0], 'maxPerSchedule'], [[1.5, 1], 'maxSchedules']] as const) {
        await assert.rejects(h.store.pruneScheduleRuns(args[0], args[1]), (e: unknown) => e instanceof InvalidInputError && e.field === field);
      }
    });

    it('fireSchedule signals wake when it created a task', async () => {
      const s = await create();
      const epoch = await lead();
      const seen: string[] = [];
      const off = h.store.onSignal((sig) => seen.push(sig.kind));
      try {
        assert.ok((await h.store.fireSchedule(fireRequest(s, epoch, [T0 + MIN]))).ok);
        await new Promise((r) => setTimeout(r, 20));
        assert.ok(seen.includes('wake'), seen.join(','));
      } finally {
        off();
      }
    });

    raceBetweenServers(hooks, 'two concurrent batches over the same schedules from two store handles make one task per slot, without deadlock', async (sibling) => {
      const other = await sibling(h.store);
      try {
        const made: ScheduleRecord[] = [];
        for (let i = 0; i < 20; i++) made.push(await create({ name: `pair-${i}` }));
        const epoch = await lead();
        const leader = { name: LEADER, holder: 'server-a', epoch };
        // Opposite orders: a batch that locked rows in request order could deadlock against the other.
        const [x, y] = await Promise.all([
          h.store.fireSchedules({ leader, now: T0 + 1, requests: made.map((s) => firing(s, [T0 + MIN])) }),
          other.fireSchedules({ leader, now: T0 + 1, requests: [...made].reverse().map((s) => firing(s, [T0 + MIN])) }),
        ]);
        for (const [i, s] of made.entries()) {
          assert.equal((await runsOf(s.id)).length, 1, `${s.name}: ${JSON.stringify([x[i], y[made.length - 1 - i]])}`);
          const okCount = [x[i]!, y[made.length - 1 - i]!].filter((r) => r.ok && r.created.length === 1).length;
          assert.equal(okCount, 1);
        }
      } finally {
        await other.close();
      }
    });

    raceBetweenServers(hooks, 'two concurrent firings of the same slot from two store handles make exactly one task', async (sibling) => {
      const other = await sibling(h.store);
      try {
        for (let round = 0; round < 5; round++) {
          const s = await create({ name: `race-${round}` });
          const epoch = await lead();
          const [a, b] = await Promise.all([h.store.fireSchedule(fireRequest(s, epoch, [T0 + MIN])), other.fireSchedule(fireRequest(s, epoch, [T0 + MIN]))]);
          const tasks = await runsOf(s.id);
          assert.equal(tasks.length, 1, `round ${round}: ${JSON.stringify([a, b])}`);
          const created = [a, b].flatMap((r) => (r.ok ? r.created : []));
          assert.deepEqual(created.map((t) => t.id), [tasks[0]!.id]);
          // The loser either saw the advanced schedule (stale) or had its slot refused by the unique key.
          const loser = a.ok && a.created.length === 1 ? b : a;
          assert.ok(!loser.ok ? loser.reason === 'stale' : loser.alreadyFired.length === 1, JSON.stringify(loser));
          assert.equal((await h.store.scheduleRuns(s.id, 10)).length, 1);
        }
      } finally {
        await other.close();
      }
    });
  });
}
