/**
 * Fault 4: the machine's PostgreSQL restarts in the middle of a run.
 *
 * One server on a fresh test database (test/support/postgres.ts), two agents,
 * 120 tasks of 0.3 s. When a third of them succeeded, PostgreSQL is stopped
 * (`pg_ctlcluster --skip-systemctl-redirect VERSION main stop`), probed
 * through the API, and started again: a restart split in two so the test
 * knows when the outage is on. The cluster is shared with other tests, so the
 * outage is short (the probes, at least 1.5 s), and the `after` hook starts
 * PostgreSQL again whatever happened.
 *
 * Pass criterion:
 * - during the outage every probe (POST /v1/tasks, GET /v1/tasks/:id, GET
 *   /v1/tasks) answers within PROBE_TIMEOUT_MS (no hang) with 503 and an
 *   `unavailable` error whose message says the database is unavailable; at
 *   least one POST got that 503;
 * - after PostgreSQL is back, a submission is acknowledged again within
 *   RESUME_BOUND_MS, and every acknowledged task (before, and after the
 *   outage) ends `succeeded` with exactly one succeeded attempt;
 * - wake-ups are pushed again once PostgreSQL is back (the LISTEN connection
 *   reconnected): within WAKE_BOUND_MS of the start, three submissions in a
 *   row to the idle cluster are claimed within WAKE_MS of their creation.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { startCluster, type Cluster } from '../e2e/harness.js';
import { PG_SKIP_REASON, createTestDatabase, requirePostgres, type TestDatabase } from '../support/postgres.js';
import { FAULTS_SKIP, FAST_SERVER_ARGS, allTasks, call, closeCluster, secs, settle, taskDetail, until, type Reply } from './support.js';

// Only when the case runs: an unreachable PostgreSQL must not fail `npm test`, where the case is skipped.
const PG = FAULTS_SKIP ? false : await requirePostgres();
const TASKS = 120;
const PROBE_TIMEOUT_MS = 10_000;
const RESUME_BOUND_MS = 15_000;
const PROBES = 3;
const OUTAGE_MS = 1_500;
/** Submit → claim when the wake-up is pushed (the fallback sweep runs every 1 s). */
const WAKE_MS = 250;
const WAKE_BOUND_MS = 20_000;

function pgVersion(): string {
  const versions = readdirSync('/etc/postgresql');
  if (versions.length !== 1) throw new Error(`expected one PostgreSQL version in /etc/postgresql, found ${versions.join(', ')}`);
  return versions[0]!;
}

function pgctl(action: 'start' | 'stop' | 'status'): string {
  return execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', pgVersion(), 'main', action], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
}

function pgOnline(): boolean {
  try {
    pgctl('status');
    return true;
  } catch {
    return false; // pg_ctlcluster status exits 3 when the cluster is down
  }
}

describe('faults: PostgreSQL restart during a run', { skip: FAULTS_SKIP || (PG ? false : PG_SKIP_REASON) }, () => {
  let db: TestDatabase | undefined;
  let c: Cluster | undefined;
  let stopped = false;
  after(async () => {
    // PostgreSQL is shared: it must be up again whatever happened above.
    if (stopped || !pgOnline()) {
      try {
        pgctl('start');
      } catch (e) {
        if (!pgOnline()) throw e;
      }
    }
    await closeCluster(c);
    await db?.drop();
  });

  it('answers 503 while PostgreSQL is down, then runs every acknowledged task', async (t) => {
    db = await createTestDatabase();
    c = await startCluster({ workers: 0, db: db.url, serverArgs: [...FAST_SERVER_ARGS, '--db-pool', '4'] });
    const cl = c;
    await cl.startWorker({ id: 'w1', slots: 4 });
    await cl.startWorker({ id: 'w2', slots: 4 });
    const spec = (i: number) => ({ name: `pg-${i}`, command: 'sh', args: ['-c', 'sleep 0.3'] });
    const acked: string[] = [];
    for (let i = 0; i < TASKS; i++) acked.push(await cl.api.submit(spec(i)));
    await until('a third of the tasks to succeed', async () => (await allTasks(cl.api)).filter((x) => x.state === 'succeeded').length >= TASKS / 3, 60_000);

    const downAt = Date.now();
    stopped = true;
    pgctl('stop');
    const probes: Array<{ what: string; r: Reply | null; err: string | null }> = [];
    const probe = async (what: string, method: string, path: string, body?: unknown) => {
      try {
        probes.push({ what, r: await call(cl.api, method, path, body, PROBE_TIMEOUT_MS), err: null });
      } catch (e) {
        probes.push({ what, r: null, err: String(e) });
      }
    };
    // At least PROBES rounds and OUTAGE_MS, so that the agents' exits and heartbeats also meet the outage.
    for (let i = 0; i < PROBES || Date.now() - downAt < OUTAGE_MS; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      await probe('POST /v1/tasks', 'POST', '/v1/tasks', spec(1000 + i));
      await probe('GET /v1/tasks/:id', 'GET', `/v1/tasks/${acked[0]}`);
      await probe('GET /v1/tasks', 'GET', '/v1/tasks?limit=10');
    }
    const outageMs = Date.now() - downAt;
    pgctl('start');
    stopped = false;
    const answers: Record<string, number> = {};
    for (const p of probes) {
      const k = `${p.what} → ${p.r ? p.r.status : 'no answer'}`;
      answers[k] = (answers[k] ?? 0) + 1;
    }
    t.diagnostic(`PostgreSQL down for ${secs(outageMs)}; probes: ${JSON.stringify(answers)}, slowest ${Math.max(...probes.map((p) => p.r?.ms ?? Infinity))} ms`);
    const sample = probes.find((p) => p.r?.status === 503)?.r;
    if (sample) t.diagnostic(`503 body: ${sample.text}`);

    for (const p of probes) {
      assert.ok(p.r, `${p.what} did not answer: ${p.err}`);
      assert.equal(p.r.status, 503, `${p.what}: ${p.r.status} ${p.r.text}`);
      assert.equal(p.r.body?.error?.code, 'unavailable', `${p.what}: ${p.r.text}`);
      assert.match(p.r.body.error.message, /database unavailable/i, p.what);
    }
    assert.ok(probes.some((p) => p.what.startsWith('POST') && p.r?.status === 503), 'a submission got a 503 during the outage');

    // Service resumes: a submission is acknowledged again, soon.
    const backAt = Date.now();
    const resumed = await until('a submission to be acknowledged after PostgreSQL is back', async () => {
      const r = await call(cl.api, 'POST', '/v1/tasks', spec(2000), PROBE_TIMEOUT_MS);
      if (r.status === 201) return r.body.task.id as string;
      if (r.status !== 503) throw new Error(`${r.status} ${r.text}`);
      return null;
    }, RESUME_BOUND_MS, 100);
    t.diagnostic(`submissions acknowledged again ${secs(Date.now() - backAt)} after the start of PostgreSQL`);
    acked.push(resumed);
    for (let i = 0; i < 20; i++) acked.push(await cl.api.submit(spec(3000 + i)));

    const done = await settle(cl.api, acked, 90_000);
    const bad: string[] = [];
    let lost = 0;
    for (const id of acked) {
      const task = done.get(id);
      if (task.state !== 'succeeded') {
        bad.push(`${id}: ${task.state}`);
        continue;
      }
      lost += task.lostCount;
      if (task.attempts > 1) {
        const d = await taskDetail(cl.api, id);
        if (d.attempts.filter((x) => x.state === 'succeeded').length !== 1) bad.push(`${id}: ${JSON.stringify(d.attempts)}`);
      }
    }
    t.diagnostic(`${acked.length} acknowledged tasks, ${lost} attempts lost over the outage`);
    assert.deepEqual(bad, []);

    // Wake-ups are pushed again (the LISTEN connection came back): on the idle cluster, a
    // new task is claimed within WAKE_MS of its creation, three times in a row. Without
    // LISTEN only the 1 s fallback sweep would claim it.
    let streak = 0;
    const latencies: number[] = [];
    await until(`3 submissions in a row claimed within ${WAKE_MS} ms (last: ${latencies.slice(-5).join(', ')} ms)`, async () => {
      const d = await cl.api.waitDone(await cl.api.submit({ name: 'wake', command: 'true' }));
      const ms = Date.parse(d.attempts[0].startedAt) - Date.parse(d.task.createdAt);
      latencies.push(ms);
      streak = ms <= WAKE_MS ? streak + 1 : 0;
      return streak >= 3;
    }, WAKE_BOUND_MS, 100);
    t.diagnostic(`submit → claim after the outage: ${latencies.join(', ')} ms; pushed again ${secs(Date.now() - backAt)} after the start of PostgreSQL`);
  });
});
