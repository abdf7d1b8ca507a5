/**
 * Fault 3: kill -9 of the server.
 *
 * First, once, with a lease long enough that the outage is clearly short: the
 * agents must re-attach their running attempts (criterion at that case).
 *
 * Then 20 times at random moments, during a run of 500 tasks; each time the
 * server restarts on the same port and SQLite file. With the short lease of
 * the suite (3 s) some attempts are lost when an agent's reconnect backoff
 * keeps missing the short windows the server is up: they run again, which
 * the criterion allows (at-least-once) and the diagnostics count.
 *
 * Each task appends "$DROVER_TASK_ID $DROVER_ATTEMPT" to a ledger file, then
 * sleeps 0.3 s; the submissions are paced over about 20 s, so the kills land
 * both while tasks are submitted and while they run. Submissions go through the API and are retried on connection
 * errors and 503; only ids that got a 201 count as acknowledged.
 *
 * Pass criterion (the 20 kills):
 * - every acknowledged task ends `succeeded`;
 * - every acknowledged task id is in the ledger;
 * - no task has more ledger lines than attempts the server recorded, no
 *   (task, attempt number) pair ran twice, and every task id in the ledger is
 *   one the server knows (unacknowledged submissions may exist and run);
 * - after a last kill -9, the SQLite database passes `PRAGMA integrity_check`.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startCluster, type Cluster } from '../e2e/harness.js';
import { FAULTS_SKIP, FAST_SERVER_ARGS, HEARTBEAT_MS, allTasks, call, closeCluster, isConnectionError, secs, settle, taskDetail, until, waitFileSh } from './support.js';

const TASKS = 500;
const KILLS = 20;
const SUBMITTERS = 4;
/** Pause of each submitter between two submissions: about 20 s of submitting in all. */
const SUBMIT_PACE_MS = 150;
/** Long enough that a server restart (1-2 s on this machine) plus the agents' reconnect backoff is clearly shorter. */
const REATTACH_LEASE_MS = 8_000;

describe('faults: kill -9 of the server, repeatedly, during a run', { skip: FAULTS_SKIP }, () => {
  let c: Cluster | undefined;
  after(() => closeCluster(c));

  /*
   * Pass criterion (the re-attach promise, measured on its own): kill -9 of the
   * server while 4 attempts run, and a restart on the same port and file that
   * is back well within the lease (REATTACH_LEASE_MS; checked, else the case
   * fails as inconclusive): the agents reconnect and re-attach their running
   * attempts, so each task ends `succeeded` with exactly one attempt (none
   * `lost`, nothing rerun).
   */
  it('a short outage of the server costs no attempt: running attempts are re-attached', async (t) => {
    const c1 = await startCluster({ workers: 0, serverArgs: ['--heartbeat', `${HEARTBEAT_MS}ms`, '--lease', `${REATTACH_LEASE_MS}ms`, '--log-level', 'warn'] });
    try {
      await c1.startWorker({ id: 'w1', slots: 2 });
      await c1.startWorker({ id: 'w2', slots: 2 });
      const go = join(c1.dir, 'go');
      // Each runs until the server is back, then a little longer.
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) ids.push(await c1.api.submit({ name: `reattach-${i}`, script: `${waitFileSh(go)}; sleep 0.5` }));
      await until('4 attempts running', async () => (await allTasks(c1.api)).filter((x) => x.state === 'running').length === 4, 15_000);
      await c1.server.stop('SIGKILL');
      const killedAt = Date.now();
      await c1.startServer();
      const backMs = Date.now() - killedAt;
      // Re-attached means: both agents connected again, and the 4 attempts still running.
      await until('both agents to reconnect', async () => (await call(c1.api, 'GET', '/v1/workers')).body.workers.filter((w: any) => w.state === 'connected').length === 2, REATTACH_LEASE_MS);
      const reconnectedMs = Date.now() - killedAt;
      t.diagnostic(`server back after ${secs(backMs)}, agents reconnected after ${secs(reconnectedMs)} (lease ${secs(REATTACH_LEASE_MS)})`);
      assert.ok(reconnectedMs < REATTACH_LEASE_MS - 1_000, `inconclusive: the outage (${secs(reconnectedMs)}) was not short against the lease`);
      writeFileSync(go, '');
      const done = await settle(c1.api, ids, 30_000);
      for (const id of ids) {
        const d = await taskDetail(c1.api, id);
        const ctx = `${id}: ${JSON.stringify({ task: done.get(id), attempts: d.attempts })}`;
        assert.equal(done.get(id).state, 'succeeded', ctx);
        assert.deepEqual(d.attempts.map((x) => x.state), ['succeeded'], ctx);
      }
    } finally {
      await closeCluster(c1);
    }
  });

  it(`loses no acknowledged task of ${TASKS} through ${KILLS} kill -9 + restart`, async (t) => {
    c = await startCluster({ workers: 0, serverArgs: FAST_SERVER_ARGS });
    const cl = c;
    const ledger = join(cl.dir, 'ledger');
    const dbFile = join(cl.dir, 'drover.db');
    await cl.startWorker({ id: 'w1', slots: 4 });
    await cl.startWorker({ id: 'w2', slots: 4 });
    const spec = (i: number) => ({ name: `k9s-${i}`, command: 'sh', args: ['-c', `echo "$DROVER_TASK_ID $DROVER_ATTEMPT" >> ${ledger}; sleep 0.3`] });

    const acked: string[] = [];
    let failedTries = 0;
    let next = 0;
    let submitting = true;
    const submitters = Array.from({ length: SUBMITTERS }, async () => {
      while (next < TASKS) {
        const i = next++;
        for (;;) {
          try {
            const r = await call(cl.api, 'POST', '/v1/tasks', spec(i), 10_000);
            if (r.status === 201) {
              acked.push(r.body.task.id);
              break;
            }
            if (r.status !== 503) throw new Error(`submit ${i}: ${r.status} ${r.text}`);
          } catch (e) {
            if (!isConnectionError(e)) throw e;
          }
          failedTries++;
          await new Promise((r) => setTimeout(r, 50)); // back off while the server restarts
        }
        // Pace the submissions so that they span many of the kills, not just the first ones.
        await new Promise((r) => setTimeout(r, SUBMIT_PACE_MS));
      }
    });
    const allSubmitted = Promise.all(submitters).finally(() => (submitting = false));

    // The killer: KILLS times, at a random moment 0.2..1.2 s after the server is back.
    const restartMs: number[] = [];
    let killsWhileSubmitting = 0;
    for (let k = 0; k < KILLS; k++) {
      await new Promise((r) => setTimeout(r, 200 + Math.random() * 1000));
      if (submitting) killsWhileSubmitting++;
      await cl.server.stop('SIGKILL');
      const t0 = Date.now();
      await cl.startServer();
      restartMs.push(Date.now() - t0);
    }
    await allSubmitted;
    t.diagnostic(`${acked.length} acknowledged, ${failedTries} failed submit tries; ${killsWhileSubmitting} of ${KILLS} kills during submission; restart ${Math.max(...restartMs)} ms max`);
    assert.equal(acked.length, TASKS);

    const t0 = Date.now();
    const done = await settle(cl.api, acked, 180_000);
    t.diagnostic(`settled ${secs(Date.now() - t0)} after the last restart`);
    const everything = new Map((await allTasks(cl.api)).map((x) => [x.id, x]));

    const lines = readFileSync(ledger, 'utf8').split('\n').filter(Boolean);
    const runs = new Map<string, number[]>();
    for (const line of lines) {
      const [id, n] = line.split(' ');
      assert.ok(id && n && /^\d+$/.test(n), `malformed ledger line ${JSON.stringify(line)}`);
      runs.set(id, [...(runs.get(id) ?? []), Number(n)]);
    }
    const bad: string[] = [];
    for (const id of acked) {
      const task = done.get(id);
      if (task?.state !== 'succeeded') bad.push(`${id}: ${task?.state ?? 'missing'}`);
      if (!runs.has(id)) bad.push(`${id}: not in the ledger`);
    }
    let reruns = 0;
    for (const [id, ns] of runs) {
      const task = everything.get(id);
      if (!task) {
        bad.push(`${id}: in the ledger but unknown to the server`);
        continue;
      }
      if (ns.length > task.attempts) bad.push(`${id}: ${ns.length} ledger lines, ${task.attempts} attempts recorded`);
      if (new Set(ns).size !== ns.length) bad.push(`${id}: attempt numbers ran twice: ${ns.join(',')}`);
      if (ns.some((n) => n > task.attempts)) bad.push(`${id}: ran attempt ${Math.max(...ns)} of ${task.attempts} recorded`);
      if (ns.length > 1) reruns++;
    }
    const lostErrors: Record<string, number> = {};
    for (const task of everything.values()) {
      // Summary rows carry no lostCount: every task's attempts are read.
      for (const a of (await taskDetail(cl.api, task.id)).attempts) {
        if (a.state !== 'lost') continue;
        const why = String(a.error).replace(/worker \S+/, 'worker W').replace(/\d+ ms/, 'N ms');
        lostErrors[why] = (lostErrors[why] ?? 0) + 1;
      }
    }
    t.diagnostic(`${runs.size} task ids in the ledger (${lines.length} lines, ${reruns} tasks ran more than once), ${everything.size} tasks known to the server; lost attempts: ${JSON.stringify(lostErrors)}`);
    assert.deepEqual(bad.slice(0, 20), [], `${bad.length} violations`);

    // A last crash, then the file must be a sound database.
    await cl.server.stop('SIGKILL');
    const db = new Database(dbFile, { fileMustExist: true });
    try {
      const check = db.pragma('integrity_check') as Array<{ integrity_check: string }>;
      assert.deepEqual(check.map((r) => r.integrity_check), ['ok']);
    } finally {
      db.close();
    }
  });
});
