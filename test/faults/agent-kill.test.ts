/**
 * Fault 1: kill -9 of an agent that runs attempts (and, second case, a task
 * that kills every agent it runs on: the lost cap).
 *
 * Pass criterion: after `kill -9` of agent A running 6 attempts, every one of
 * the 6 tasks is running again on agent B within lease + 2 s of the kill
 * (lease 3 s, heartbeat 500 ms, the server's lease sweep runs every 1 s);
 * each task then ends `succeeded` with exactly one succeeded attempt (number
 * 2, on B, which the task's result names), its first attempt ended `lost`,
 * and that loss used no retry (retriesUsed 0, lostCount 1). A's own
 * processes do not outlive it: its reaper stops them within its grace (2 s)
 * + 1 s of the kill, before any replacement can start.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startCluster, type Cluster } from '../e2e/harness.js';
import { FAULTS_SKIP, FAST_SERVER_ARGS, LEASE_MS, TERMINAL, allTasks, closeCluster, pidScript, procState, readPids, secs, settle, taskDetail, until } from './support.js';

const N = 6;
const MARGIN_MS = 2_000;

describe('faults: kill -9 of an agent', { skip: FAULTS_SKIP }, () => {
  let c: Cluster | undefined;
  let pids = '';
  let c2: Cluster | undefined;
  let pids2 = '';
  // The killed agents' reapers stop their processes; closeCluster kills any left by pid anyway.
  after(async () => {
    await closeCluster(c, pids);
    await closeCluster(c2, pids2);
  });

  it(`requeues its ${N} attempts within lease + ${MARGIN_MS / 1000} s; each task succeeds once, the first attempt lost without using a retry`, async (t) => {
    c = await startCluster({ workers: 0, serverArgs: FAST_SERVER_ARGS });
    pids = join(c.dir, 'pids');
    mkdirSync(pids);
    const a = await c.startWorker({ id: 'a', slots: N });
    const ids: string[] = [];
    // 4 s: long enough that none can finish on A between "all running" and the kill.
    for (let i = 0; i < N; i++) ids.push(await c.api.submit({ name: `k9-${i}`, script: pidScript(pids, 'exec sleep 4') }));
    await until(`${N} attempts running on a`, async () => readPids(pids).length === N && (await allTasks(c!.api)).filter((t) => t.state === 'running').length === N, 15_000);
    await c.startWorker({ id: 'b', slots: N });

    const firstPids = readPids(pids).map((p) => p.pid);
    const killedAt = Date.now();
    await a.stop('SIGKILL');
    await until('the killed agent\'s attempts to be stopped by its reaper', () => firstPids.every((pid) => [null, 'Z'].includes(procState(pid))), 3_000, 20);
    const reapedMs = Date.now() - killedAt;
    const early = (await allTasks(c.api)).filter((x) => ids.includes(x.id) && x.attempts >= 2);
    assert.equal(early.length, 0, `no replacement started before the old processes were gone (${secs(reapedMs)} after the kill)`);
    t.diagnostic(`agent kill -9 -> its ${N} processes gone after ${secs(reapedMs)} (reaper)`);
    await until(
      async () => `every task running again on b: ${JSON.stringify((await allTasks(c!.api)).map((t) => [t.state, t.attempts]))}`,
      async () => {
        const tasks = (await allTasks(c!.api)).filter((t) => ids.includes(t.id));
        return tasks.length === N && tasks.every((t) => t.attempts >= 2);
      },
      LEASE_MS + MARGIN_MS + 5_000,
      25,
    );
    const requeuedMs = Date.now() - killedAt;
    assert.ok(requeuedMs <= LEASE_MS + MARGIN_MS, `all ${N} tasks running again after ${secs(requeuedMs)}, bound ${secs(LEASE_MS + MARGIN_MS)}`);

    const done = await settle(c.api, ids, 30_000);
    for (const id of ids) {
      const task = done.get(id);
      const d = await taskDetail(c.api, id);
      const ctx = `${id}: ${JSON.stringify({ task, attempts: d.attempts })}`;
      assert.equal(task.state, 'succeeded', ctx);
      assert.equal(d.attempts.length, 2, ctx);
      assert.deepEqual(d.attempts.map((x) => [x.number, x.workerId, x.state]), [[1, 'a', 'lost'], [2, 'b', 'succeeded']], ctx);
      assert.equal(task.retriesUsed, 0, ctx);
      assert.equal(task.lostCount, 1, ctx);
      assert.equal(task.result.attempt, 2, ctx);
      assert.equal(task.result.outcome, 'succeeded', ctx);
      assert.equal(d.events.filter((e) => e.reason === 'attempt_succeeded').length, 1, ctx);
    }
    t.diagnostic(`agent kill -9 -> ${N} attempts running again on b after ${secs(requeuedMs)} (lease ${secs(LEASE_MS)})`);
  });

  /*
   * Pass criterion (the lost cap): a task whose every attempt kills its agent
   * (`kill -9 $PPID`) does not loop forever: with an agent restarted whenever
   * none is alive, the task ends `failed` after its 6th lost attempt (cap 5
   * exceeded, event `lost_cap_exceeded`), having used no retry, and no 7th
   * attempt is made.
   */
  it('a task that kills every agent it runs on fails after the lost cap (5) instead of looping', async (t) => {
    c2 = await startCluster({ workers: 0, serverArgs: FAST_SERVER_ARGS });
    const cl = c2;
    pids2 = join(cl.dir, 'pids');
    mkdirSync(pids2);
    const killer = await cl.api.submit({ name: 'agent-killer', script: pidScript(pids2, 'kill -9 $PPID; exec sleep 30') });
    let agents = 0;
    const t0 = Date.now();
    const task = await until(
      async () => `the agent-killer task to end (${agents} agents started): ${JSON.stringify((await cl.api.task(killer)).task)}`,
      async () => {
        const tk = (await cl.api.task(killer)).task;
        if (TERMINAL.includes(tk.state)) return tk;
        if (!cl.workers.some((w) => w.child.exitCode === null && w.child.signalCode === null)) await cl.startWorker({ id: `k${++agents}`, slots: 1 });
        return null;
      },
      90_000,
      100,
    );
    const d = await taskDetail(cl.api, killer);
    const ctx = JSON.stringify({ task, attempts: d.attempts, events: d.events });
    t.diagnostic(`failed after ${d.attempts.length} lost attempts, ${agents} agents, ${secs(Date.now() - t0)}`);
    assert.equal(task.state, 'failed', ctx);
    assert.deepEqual(d.attempts.map((x) => x.state), Array(6).fill('lost'), ctx);
    assert.equal(task.lostCount, 6, ctx);
    assert.equal(task.retriesUsed, 0, ctx);
    assert.equal(task.result?.outcome, 'lost', ctx);
    assert.equal(d.events.at(-1)?.reason, 'lost_cap_exceeded', ctx);
  });
});
