/**
 * Fault 7: the holder of the `cron` leadership lease is killed (kill -9) or
 * paused (SIGSTOP), with two `drover server` processes on one fresh
 * PostgreSQL database (issue 11: "two servers on PostgreSQL with one
 * killed"). Per-second schedules (a seconds field); everything is checked
 * from the database: the `leaders` row, the schedules' tasks (schedule_id,
 * scheduled_at, created_at) and `schedule_runs`.
 *
 * In this suite rather than test/e2e/: about a minute, mostly waiting out the
 * 5 s lease, and its bounds are timings that hold better with the suite's one
 * file at a time than beside the rest of `npm test`. The case that needs no
 * timing (a firer stalled inside its firing transaction cannot hold a
 * takeover up) is test/store/postgres-fire-stall.test.ts, in `npm test`.
 *
 * No worker: the subject is the firing (which slot got a task, when, how
 * many), not running the tasks (test/e2e/cron-firing.test.ts and
 * multi-server.test.ts cover that); the tasks stay `waiting`.
 *
 * Which server holds the lease: the holder is the server's id,
 * `${hostname}-${pid}-${random}` (server/main.ts), so the pid in it names the
 * process; nothing new is exposed for the test.
 *
 * Pass criterion (server defaults: lease TTL 5 s renewed every 1 s tick;
 * DUE_GRACE 5 s; SLACK_MS = 1.5 s for a loaded machine):
 * - kill -9 of the holder: nobody takes the lease before it expired (the
 *   takeover's time > the dead holder's last expires_at E, database clock),
 *   the other server takes it within a tick + SLACK_MS of E (so within
 *   TTL + tick + slack of the death), with a higher epoch; its first pass,
 *   within SLACK_MS of the takeover, decides every slot that came due
 *   meanwhile in one transaction (one created_at): `all` fires each, `none`
 *   skips those older than DUE_GRACE at that pass (recording the first and
 *   last) and fires the rest; after it, each slot is fired within 1 s;
 * - an outage longer than the grace (the other server paused while the holder
 *   is killed, resumed after E + DUE_GRACE): at least two slots were missed;
 *   `all` fires each of them, `none` records them skipped and the count in
 *   its log ("dropped") equals them;
 * - SIGSTOP of the holder, SIGCONT after the other took over (same bounds)
 *   and fired a few slots: the resumed one logs that it no longer fires
 *   (another holds the lease, or its firing was refused as not_leader),
 *   never logs taking it again, and for 4 more slots the lease stays the
 *   other's under the same epoch, each slot fired within 1 s;
 * - every time: every slot from the schedule's first to its last has exactly
 *   one task, or (`none`) lies in a recorded skipped range; no slot has two
 *   tasks (GROUP BY scheduled_at HAVING count(*) > 1 is empty).
 * The takeover gap (last task of the old leader → first of the new) is
 * printed as a diagnostic.
 *
 * The waits are bounded polls of the database for a state. The only wait on
 * time itself is the outage longer than the grace (its subject).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it, type TestContext } from 'node:test';
import pg from 'pg';
import { DUE_GRACE_MS } from '../../src/core/cron/plan-due.js';
import { CRON_LEASE, DEFAULT_CRON_LEASE_TTL_MS, DEFAULT_CRON_TICK_MS } from '../../src/server/cron-service.js';
import { Api, startProc, stopAll, type Proc } from '../e2e/harness.js';
import { createTestDatabase, dropAllTestDatabases, PG_SKIP_REASON, requirePostgres } from '../support/postgres.js';
import { FAULTS_SKIP, until } from './support.js';

// Only when the cases run: an unreachable PostgreSQL must not fail `npm test`, where they are skipped.
const PG = FAULTS_SKIP ? false : await requirePostgres();
const ADMIN = `drv_test_${randomBytes(16).toString('hex')}`;
const TTL = DEFAULT_CRON_LEASE_TTL_MS;
const TICK = DEFAULT_CRON_TICK_MS;
/** Scheduling delay on a loaded 2-core machine, on top of the lease's own bound. */
const SLACK_MS = 1500;
/** How long before its writes a cron pass may have read its clock (the window in which a slot's age crosses the grace unseen): one slot. */
const PLAN_SLACK_MS = 1000;
const EVERY_SECOND = '* * * * * *';
const SLOT_MS = 1000;
/** Larger than any outage here, so `all` never caps (no slot may be missing). */
const MAX_CATCHUP = 100;

const iso = (t: number) => new Date(t).toISOString();
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Server {
  name: string;
  proc: Proc;
  pid: number;
  api: Api;
}

/** A server with info logs: its cron service logs when it starts and stops firing. */
async function startServer(name: string, db: string): Promise<Server> {
  const { proc, match } = await startProc(['server', '--db', db, '--port', '0', '--log-level', 'info'], { DROVER_ADMIN_TOKEN: ADMIN }, /listening on (http:\/\/127\.0\.0\.1:\d+)/);
  return { name, proc, pid: proc.child.pid!, api: new Api(match![1]!, ADMIN) };
}

interface Lease {
  holder: string;
  epoch: number;
  expiresAt: number;
}
interface SlotTask {
  id: string;
  slot: number;
  createdAt: number;
}
interface Run {
  slot: number;
  outcome: string;
  reason: string | null;
  at: number;
}

/** The test's own connection to the servers' database: every check reads from here. */
class Observer {
  private constructor(private readonly c: pg.Client) {}
  static async open(url: string): Promise<Observer> {
    const c = new pg.Client({ connectionString: url, application_name: 'drover-test-observer' });
    c.on('error', () => {}); // reported by the failing query
    await c.connect();
    return new Observer(c);
  }
  close(): Promise<void> {
    return this.c.end();
  }
  async lease(): Promise<Lease | null> {
    const r = await this.c.query('SELECT holder, epoch, expires_at FROM leaders WHERE name = $1', [CRON_LEASE]);
    const row = r.rows[0];
    return row ? { holder: row.holder, epoch: Number(row.epoch), expiresAt: Number(row.expires_at) } : null;
  }
  async tasks(scheduleId: string): Promise<SlotTask[]> {
    const r = await this.c.query('SELECT id, scheduled_at, created_at FROM tasks WHERE schedule_id = $1 ORDER BY scheduled_at, id', [scheduleId]);
    return r.rows.map((x) => ({ id: x.id, slot: Number(x.scheduled_at), createdAt: Number(x.created_at) }));
  }
  async doubles(scheduleId: string): Promise<Array<{ slot: number; n: number }>> {
    const r = await this.c.query('SELECT scheduled_at, count(*) AS n FROM tasks WHERE schedule_id = $1 GROUP BY scheduled_at HAVING count(*) > 1', [scheduleId]);
    return r.rows.map((x) => ({ slot: Number(x.scheduled_at), n: Number(x.n) }));
  }
  async runs(scheduleId: string): Promise<Run[]> {
    const r = await this.c.query('SELECT slot_at, outcome, reason, at FROM schedule_runs WHERE schedule_id = $1 ORDER BY slot_at', [scheduleId]);
    return r.rows.map((x) => ({ slot: Number(x.slot_at), outcome: x.outcome, reason: x.reason, at: Number(x.at) }));
  }
  async lastSlot(scheduleId: string): Promise<number | null> {
    const r = await this.c.query('SELECT last_slot_at FROM schedules WHERE id = $1', [scheduleId]);
    return r.rows[0]?.last_slot_at == null ? null : Number(r.rows[0].last_slot_at);
  }
}

/** The server whose pid is in the holder's name, `${hostname}-${pid}-${random}` (server/main.ts). */
function holderOf(lease: Lease | null, servers: Server[]): Server | undefined {
  if (!lease) return undefined;
  const pid = Number(/-(\d+)-[0-9a-f]+$/.exec(lease.holder)?.[1]);
  return servers.find((s) => s.pid === pid);
}

interface Sched {
  id: string;
  name: string;
  catchup: 'all' | 'none';
  /** The first fire time after creation (the API's nextFireAt). */
  first: number;
}

async function addSchedule(api: Api, name: string, catchup: 'all' | 'none'): Promise<Sched> {
  const r = await api.req('POST', '/v1/schedules', { name, schedule: EVERY_SECOND, catchup, maxCatchup: MAX_CATCHUP, task: { command: 'true' } });
  assert.equal(r.status, 201, r.text);
  return { id: r.body.schedule.id, name, catchup, first: Date.parse(r.body.schedule.nextFireAt) };
}

/** Waits until `s` has advanced to (fired or skipped) slot `slot` or later. */
function waitSlot(db: Observer, s: Sched, slot: number, timeoutMs: number): Promise<number> {
  let last: number | null = null;
  return until(() => `${s.name} to reach slot ${iso(slot)} (at ${last === null ? 'none' : iso(last)})`, async () => {
    last = await db.lastSlot(s.id);
    return last !== null && last >= slot ? last : null;
  }, timeoutMs);
}

/**
 * One task per slot, none missing: walks every slot of `s` from its first
 * through its last (fired or skipped) and returns the tasks by slot. A slot
 * without a task must lie inside a skipped range recorded by one pass (first
 * and last skipped slot, reason catchup_none), which only `none` may have.
 */
async function auditSlots(db: Observer, s: Sched): Promise<{ bySlot: Map<number, SlotTask>; skipped: number[]; last: number }> {
  assert.deepEqual(await db.doubles(s.id), [], `${s.name}: no slot has two tasks`);
  const tasks = await db.tasks(s.id);
  const runs = await db.runs(s.id);
  const last = (await db.lastSlot(s.id))!;
  const bySlot = new Map(tasks.map((t) => [t.slot, t]));
  assert.equal(bySlot.size, tasks.length);
  // Skipped ranges: a pass that skips records the first and last slot it skipped, under one `at`.
  const skippedRuns = runs.filter((r) => r.outcome === 'skipped');
  const byPass = new Map<number, number[]>();
  for (const r of skippedRuns) {
    assert.equal(r.reason, 'catchup_none', `${s.name}: the only skips here are catch-up none: ${JSON.stringify(r)}`);
    byPass.set(r.at, [...(byPass.get(r.at) ?? []), r.slot]);
  }
  const ranges = [...byPass.values()].map((slots) => [Math.min(...slots), Math.max(...slots)] as const);
  if (s.catchup === 'all') assert.equal(skippedRuns.length, 0, `${s.name}: catch-up all skipped nothing`);
  assert.equal(tasks[0]?.slot, s.first, `${s.name}: the first slot after creation fired`);
  const skipped: number[] = [];
  for (let slot = s.first; slot <= last; slot += SLOT_MS) {
    const inRange = ranges.some(([a, b]) => slot >= a && slot <= b);
    if (bySlot.has(slot)) assert.ok(!inRange, `${s.name}: slot ${iso(slot)} both fired and skipped`);
    else {
      assert.ok(inRange, `${s.name}: slot ${iso(slot)} has no task and was not skipped (slots ${tasks.map((t) => iso(t.slot)).join(', ')})`);
      skipped.push(slot);
    }
  }
  assert.ok(tasks.every((t) => t.slot >= s.first && t.slot <= last && (t.slot - s.first) % SLOT_MS === 0), `${s.name}: every task is on a slot of the range`);
  return { bySlot, skipped, last };
}

/**
 * The takeover as the schedule's tasks show it: the dead (or paused)
 * leader's last slot and task, then the new leader's first pass, which
 * fired (or skipped) every slot that came due in between. `cut` is the
 * moment the old leader stopped (tasks created before it are its own).
 *
 * Checks the catch-up rule of core/cron/plan-due.ts on that pass, whose
 * time N is the created_at of its tasks (and the `at` of its run records):
 * a slot older than DUE_GRACE_MS at N was missed (`all` fires it, `none`
 * skips it); a younger one fires under either policy. The pass plans with
 * the clock at its start P and stamps its tasks when it writes (N), so a
 * slot that came due in between (at most the last second before N; CI saw
 * a 40 ms gap) is left to the next pass, which fires it straight after.
 * For the same reason the grace is measured from P, which nothing stores: a
 * slot between DUE_GRACE_MS and DUE_GRACE_MS + PLAN_SLACK_MS old at N may
 * have been inside the grace at P, and either fired or skipped is right for
 * it (CI saw one 5,009 ms old at N fired under `none`). Older ones must be
 * skipped; whatever `none` skipped must be older than the grace at N.
 */
function takeoverPass(s: Sched, audit: Awaited<ReturnType<typeof auditSlots>>, runs: Run[], cut: number) {
  const tasks = [...audit.bySlot.values()].sort((a, b) => a.slot - b.slot);
  const old = tasks.filter((t) => t.createdAt < cut);
  const fresh = tasks.filter((t) => t.createdAt >= cut);
  assert.ok(old.length >= 2, `${s.name}: the old leader fired before it stopped`);
  assert.ok(fresh.length >= 2, `${s.name}: the new leader fired`);
  const lastOld = old[old.length - 1]!;
  // The first pass: its time N is the created_at of the first new task or, when all its slots
  // were skipped, the `at` of its skip records.
  const skips = runs.filter((r) => r.outcome === 'skipped');
  const n = Math.min(fresh[0]!.createdAt, ...skips.map((r) => r.at));
  assert.ok(old.every((t) => t.slot < fresh[0]!.slot), `${s.name}: the old leader's slots all come before the new leader's`);
  const between: number[] = [];
  for (let slot = lastOld.slot + SLOT_MS; slot <= n; slot += SLOT_MS) between.push(slot);
  // Missed at any P in [N - PLAN_SLACK_MS, N]; and the ones that may have been inside the grace at P.
  const surely = between.filter((slot) => n - PLAN_SLACK_MS - slot > DUE_GRACE_MS);
  const maybe = between.filter((slot) => n - slot > DUE_GRACE_MS && !surely.includes(slot));
  // What the pass counted as missed: under `none`, the sure ones and those of the maybe ones it skipped.
  const missed = s.catchup === 'none' ? [...surely, ...maybe.filter((slot) => audit.skipped.includes(slot))] : [...surely, ...maybe];
  // One clock reading decided them all: no skipped slot is younger than a fired one.
  assert.ok(missed.every((m) => between.every((slot) => missed.includes(slot) || slot > m)), `${s.name}: the missed slots are the oldest ones`);
  for (const slot of between) {
    const t = audit.bySlot.get(slot);
    if (s.catchup === 'none' && missed.includes(slot)) {
      assert.equal(t, undefined, `${s.name}: missed slot ${iso(slot)} (${n - slot} ms old at the takeover pass) is not fired under none`);
      assert.ok(audit.skipped.includes(slot), `${s.name}: missed slot ${iso(slot)} is recorded as skipped`);
    } else {
      assert.ok(t, `${s.name}: slot ${iso(slot)} that came due during the outage was fired`);
      if (t.createdAt !== n) {
        assert.ok(
          slot > n - SLOT_MS && t.createdAt > n && t.createdAt - slot < SLOT_MS,
          `${s.name}: slot ${iso(slot)} fired by the takeover's first pass, in one burst, or (due after that pass began) by the next within a slot (created ${iso(t.createdAt)}, pass ${iso(n)})`,
        );
      }
    }
  }
  if (s.catchup === 'none') {
    // Exactly the missed ones were skipped, recorded by that pass (first and last slot).
    assert.deepEqual(audit.skipped.map(iso), missed.map(iso), `${s.name}: skipped = missed at the takeover`);
    if (missed.length > 0) {
      assert.deepEqual(skips.map((r) => [iso(r.slot), r.at]), [...new Set([missed[0]!, missed[missed.length - 1]!])].map((x) => [iso(x), n]), `${s.name}: first and last missed slot recorded`);
    }
  }
  return { lastOld, firstNew: fresh[0]!, pass: n, between, missed };
}

describe('faults: the cron leader killed or paused, two servers on PostgreSQL', { skip: FAULTS_SKIP || (PG ? false : PG_SKIP_REASON) }, () => {
  const observers: Observer[] = [];
  after(async () => {
    await stopAll();
    for (const o of observers) await o.close().catch(() => {});
    await dropAllTestDatabases();
  });

  /** A fresh database, two servers on it, and the one holding the cron lease. */
  async function twoServers(): Promise<{ db: Observer; servers: Server[]; leader: Server; follower: Server; lease: Lease }> {
    const tdb = await createTestDatabase();
    const db = await Observer.open(tdb.url);
    observers.push(db);
    const servers = await Promise.all([startServer('A', tdb.url), startServer('B', tdb.url)]);
    const lease = await until(() => 'a server to hold the cron lease', async () => {
      const l = await db.lease();
      return holderOf(l, servers) ? l : null;
    }, 10_000);
    const leader = holderOf(lease, servers)!;
    return { db, servers, leader, follower: servers.find((s) => s !== leader)!, lease };
  }

  /** Polls the lease until `who` holds it; returns its first observed row (expires_at − TTL ≈ when it was taken). */
  function waitHolder(db: Observer, servers: Server[], who: Server, timeoutMs: number): Promise<Lease> {
    let seen: Lease | null = null;
    return until(() => `${who.name} to take the cron lease (now ${JSON.stringify(seen)})`, async () => {
      seen = await db.lease();
      return holderOf(seen, servers) === who ? seen : null;
    }, timeoutMs, 25);
  }

  function reportGap(t: TestContext, s: Sched, p: ReturnType<typeof takeoverPass>): void {
    t.diagnostic(
      `${s.name}: takeover gap ${p.firstNew.createdAt - p.lastOld.createdAt} ms (last task of the old leader, slot ${iso(p.lastOld.slot)}, ` +
        `created ${iso(p.lastOld.createdAt)} → first of the new, created ${iso(p.firstNew.createdAt)}); ` +
        `${p.between.length} slots came due in between, ${p.missed.length} of them missed (> ${DUE_GRACE_MS} ms old)` +
        `${p.between.length ? `, the oldest fired/decided ${p.pass - p.between[0]!} ms late` : ''}`,
    );
  }

  it('kill -9 of the lease holder: the other server takes over within a tick of the lease expiry and fires each slot once, per catch-up policy', async (t) => {
    const { db, servers, leader, follower } = await twoServers();
    const all = await addSchedule(leader.api, 'failover-all', 'all');
    const none = await addSchedule(leader.api, 'failover-none', 'none');
    await Promise.all([all, none].map((s) => waitSlot(db, s, s.first + 2 * SLOT_MS, 10_000)));
    const before = await db.lease();
    assert.equal(holderOf(before, servers), leader, 'the leader has not changed while both ran');

    const cut = Date.now();
    await leader.proc.stop('SIGKILL');
    // Read after the exit: the last renewal the dead holder made (E).
    const dead = (await db.lease())!;
    assert.equal(holderOf(dead, servers), leader);
    const taken = await waitHolder(db, servers, follower, TTL + TICK + SLACK_MS + 2000);
    const takenAt = taken.expiresAt - TTL;
    t.diagnostic(`killed ${leader.name} at ${iso(cut)}; its lease expired ${iso(dead.expiresAt)} (${dead.expiresAt - cut} ms later); ${follower.name} took it at ${iso(takenAt)}, ${takenAt - dead.expiresAt} ms after the expiry, ${takenAt - cut} ms after the kill; epoch ${dead.epoch} → ${taken.epoch}`);
    assert.ok(takenAt > dead.expiresAt, `not taken before the lease expired (taken ${iso(takenAt)}, expiry ${iso(dead.expiresAt)})`);
    assert.ok(takenAt <= dead.expiresAt + TICK + SLACK_MS, `taken within a tick (+${SLACK_MS} ms slack) of the expiry: ${takenAt - dead.expiresAt} ms`);
    assert.ok(taken.epoch > dead.epoch, 'the takeover moved the epoch');

    // The new leader goes on firing on time for a few slots.
    const end = Math.ceil((Date.now() + 3 * SLOT_MS) / SLOT_MS) * SLOT_MS;
    await Promise.all([all, none].map((s) => waitSlot(db, s, end, 3 * SLOT_MS + 2 * TICK + SLACK_MS + 5000)));

    for (const s of [all, none]) {
      const audit = await auditSlots(db, s);
      const pass = takeoverPass(s, audit, await db.runs(s.id), cut);
      assert.ok(pass.pass >= takenAt && pass.pass <= takenAt + SLACK_MS, `${s.name}: the first pass ran right after the takeover (${pass.pass - takenAt} ms)`);
      assert.ok(pass.between.length >= 1, `${s.name}: slots came due while nobody fired`);
      // After the takeover the new leader fires each slot on time (the issue's 1 s).
      const later = [...audit.bySlot.values()].filter((x) => x.createdAt > pass.pass);
      assert.ok(later.length >= 2, `${s.name}: slots fired after the takeover's pass`);
      for (const x of later) assert.ok(x.createdAt - x.slot < 1000, `${s.name}: slot ${iso(x.slot)} on time after the takeover (${x.createdAt - x.slot} ms late)`);
      reportGap(t, s, pass);
    }
    // The killed one is gone; the survivor logged taking over.
    assert.match(follower.proc.output(), /now firing cron schedules/);
  });

  it('an outage longer than the grace (the other server paused meanwhile): all fires every missed slot, none records them skipped', async (t) => {
    const { db, servers, leader, follower } = await twoServers();
    const all = await addSchedule(leader.api, 'outage-all', 'all');
    const none = await addSchedule(leader.api, 'outage-none', 'none');
    await Promise.all([all, none].map((s) => waitSlot(db, s, s.first + 2 * SLOT_MS, 10_000)));

    follower.proc.child.kill('SIGSTOP');
    const cut = Date.now();
    await leader.proc.stop('SIGKILL');
    const dead = (await db.lease())!;
    assert.equal(holderOf(dead, servers), leader);
    // The subject: wall-clock time passes with nobody firing, until slots due right after the
    // kill are older than the grace even when the follower takes over at once.
    await pause(Math.max(0, dead.expiresAt - Date.now()) + DUE_GRACE_MS);
    follower.proc.child.kill('SIGCONT');
    const taken = await waitHolder(db, servers, follower, TICK + SLACK_MS + 2000);
    const takenAt = taken.expiresAt - TTL;
    t.diagnostic(`killed ${leader.name} at ${iso(cut)} with ${follower.name} paused; resumed it ${Date.now() - cut} ms later; it took the lease at ${iso(takenAt)}`);

    const end = Math.ceil((Date.now() + 2 * SLOT_MS) / SLOT_MS) * SLOT_MS;
    await Promise.all([all, none].map((s) => waitSlot(db, s, end, 2 * SLOT_MS + 2 * TICK + SLACK_MS + 5000)));
    for (const s of [all, none]) {
      const audit = await auditSlots(db, s);
      const pass = takeoverPass(s, audit, await db.runs(s.id), cut);
      assert.ok(pass.missed.length >= 2, `${s.name}: the outage made slots older than the grace (${pass.missed.length})`);
      if (s.catchup === 'none') assert.equal(audit.skipped.length, pass.missed.length);
      reportGap(t, s, pass);
    }
    // The count of dropped slots (only the first and last are stored) is in the new leader's log.
    const dropped = follower.proc.output().split('\n').filter((l) => l.includes('missed runs skipped by the catch-up policy') && l.includes(none.name));
    assert.equal(dropped.length, 1, follower.proc.output());
    assert.equal(JSON.parse(dropped[0]!).dropped, (await auditSlots(db, none)).skipped.length);
  });

  it('a paused (SIGSTOP) former leader cannot fire once resumed: the other took over, the epoch moved, no slot has two tasks', async (t) => {
    const { db, servers, leader, follower, lease: first } = await twoServers();
    const s = await addSchedule(leader.api, 'paused-leader', 'all');
    await waitSlot(db, s, s.first + 2 * SLOT_MS, 10_000);

    leader.proc.child.kill('SIGSTOP');
    const cut = Date.now();
    const stale = (await db.lease())!;
    assert.equal(holderOf(stale, servers), leader);
    const taken = await waitHolder(db, servers, follower, TTL + TICK + SLACK_MS + 2000);
    const takenAt = taken.expiresAt - TTL;
    t.diagnostic(`paused ${leader.name} at ${iso(cut)}; ${follower.name} took the lease ${takenAt - stale.expiresAt} ms after its expiry, ${takenAt - cut} ms after the pause; epoch ${stale.epoch} → ${taken.epoch}`);
    assert.ok(takenAt > stale.expiresAt, 'not taken before the lease expired');
    assert.ok(takenAt <= stale.expiresAt + TICK + SLACK_MS, `taken within a tick (+${SLACK_MS} ms slack) of the expiry: ${takenAt - stale.expiresAt} ms`);
    // The new leader fires a few slots while the old one is still paused.
    await waitSlot(db, s, Math.ceil(takenAt / SLOT_MS) * SLOT_MS + 2 * SLOT_MS, 2 * SLOT_MS + 2 * TICK + SLACK_MS + 5000);

    const logBefore = leader.proc.output().length;
    leader.proc.child.kill('SIGCONT');
    const resumedAt = Date.now();
    // Its timers were due while it was stopped: its first renewal or firing is refused, and it says so.
    const lost = await until(() => `${leader.name} to log that it stopped firing:\n${leader.proc.output().slice(logBefore)}`, async () => {
      const line = leader.proc.output().slice(logBefore).split('\n').find((l) => l.includes('no longer firing cron schedules'));
      return line ? (JSON.parse(line) as { msg: string; epoch: number }) : null;
    }, 5000);
    t.diagnostic(`${leader.name} resumed: "${lost.msg}" (its epoch ${lost.epoch})`);
    assert.equal(lost.epoch, first.epoch);
    assert.match(lost.msg, /another server holds the cron lease|not_leader/);

    // A few more slots with both running: the lease stays the new leader's, under its epoch.
    const end = Math.ceil((Date.now() + 4 * SLOT_MS) / SLOT_MS) * SLOT_MS;
    const deadline = end + 2 * TICK + SLACK_MS + 5000;
    for (;;) {
      const l = await db.lease();
      assert.equal(holderOf(l, servers), follower, `the lease stays ${follower.name}'s after ${leader.name} resumed: ${JSON.stringify(l)}`);
      assert.equal(l!.epoch, taken.epoch);
      if (((await db.lastSlot(s.id)) ?? 0) >= end) break;
      assert.ok(Date.now() < deadline, `${s.name} reaches ${iso(end)}`);
      await pause(50);
    }
    const resumedLog = leader.proc.output().slice(logBefore);
    assert.doesNotMatch(resumedLog, /now firing cron schedules/, 'the resumed server never leads again');
    assert.ok(leader.proc.child.exitCode === null, 'the resumed server is still running');

    const audit = await auditSlots(db, s);
    const pass = takeoverPass(s, audit, await db.runs(s.id), cut);
    assert.ok(pass.pass >= takenAt && pass.pass <= takenAt + SLACK_MS, `the first pass ran right after the takeover (${pass.pass - takenAt} ms)`);
    const afterResume = [...audit.bySlot.values()].filter((x) => x.createdAt >= resumedAt);
    assert.ok(afterResume.length >= 3, 'slots fired after the resume');
    for (const x of afterResume) assert.ok(x.createdAt - x.slot < 1000, `slot ${iso(x.slot)} on time after the resume (${x.createdAt - x.slot} ms late)`);
    reportGap(t, s, pass);
  });
});
