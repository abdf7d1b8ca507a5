/** Retries with backoff, timeouts that kill a whole process tree, cancel of a running task. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { alive, startCluster, type Cluster } from './harness.js';


describe('e2e: retries, timeout, cancel', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ workers: 1, slots: 4 });
  });
  after(async () => c?.close());

  it('retries a failing command 3 times with exponential backoff, then fails', async () => {
    const id = await c.api.submit({ command: 'sh', args: ['-c', 'echo "try $DROVER_ATTEMPT"; exit 3'], retry: { baseDelay: '100ms' } });
    const done = await c.api.waitDone(id);
    assert.equal(done.task.state, 'failed');
    assert.equal(done.task.result.exitCode, 3);
    assert.equal(done.task.result.attempt, 4);
    assert.equal(done.attempts.length, 4);
    assert.equal(done.logs, 'try 1\n--- drover: attempt 2 ---\ntry 2\n--- drover: attempt 3 ---\ntry 3\n--- drover: attempt 4 ---\ntry 4\n');
    const retries = done.events.filter((e: any) => e.to === 'retrying');
    assert.deepEqual(retries.map((e: any) => e.detail.delayMs), [100, 200, 400]);
    // The next attempt starts no earlier than the recorded delay after the failed one ended.
    for (let i = 1; i < 4; i++) {
      const gap = Date.parse(done.attempts[i].startedAt) - Date.parse(done.attempts[i - 1].endedAt);
      assert.ok(gap >= retries[i - 1].detail.delayMs, `gap ${gap} < delay ${retries[i - 1].detail.delayMs}`);
    }
    assert.deepEqual(retries.map((e: any) => e.reason), ['attempt_failed', 'attempt_failed', 'attempt_failed']);
    assert.equal(done.events.at(-1).reason, 'retries_exhausted');
  });

  it('a failing task that later succeeds ends succeeded', async () => {
    const marker = join(c.dir, 'flaky-marker');
    const id = await c.api.submit({ script: `if [ -e ${marker} ]; then echo ok; else touch ${marker}; exit 1; fi`, retry: { baseDelay: 50 } });
    const done = await c.api.waitDone(id);
    assert.equal(done.task.state, 'succeeded');
    assert.equal(done.attempts.length, 2);
    assert.deepEqual(done.attempts.map((a: any) => a.state), ['failed', 'succeeded']);
  });

  it('a timeout kills the whole process tree, including a child that ignores SIGTERM', async () => {
    const pids = join(c.dir, 'timeout-pids');
    const script = `trap '' TERM; (trap '' TERM; sleep 300) & echo $! > ${pids}; echo $$ >> ${pids}; sleep 300`;
    const id = await c.api.submit({ script, timeout: '1s', retry: { maxRetries: 0 } });
    const done = await c.api.waitDone(id);
    assert.equal(done.task.state, 'failed');
    assert.equal(done.task.result.outcome, 'timed_out');
    assert.equal(done.attempts[0].state, 'timed_out');
    assert.ok(existsSync(pids));
    const list = readFileSync(pids, 'utf8').trim().split('\n').map(Number);
    assert.equal(list.length, 2);
    for (const pid of list) assert.ok(!alive(pid), `process ${pid} survived the timeout`);
    const timedOut = done.events.find((e: any) => e.to === 'failed');
    assert.equal(timedOut.reason, 'retries_exhausted');
  });

  it('a timed-out attempt counts as a failed attempt and is retried', async () => {
    const id = await c.api.submit({ command: 'sleep', args: ['30'], timeout: '200ms', retry: { maxRetries: 1, baseDelay: 10 } });
    const done = await c.api.waitDone(id);
    assert.equal(done.task.state, 'failed');
    assert.deepEqual(done.attempts.map((a: any) => a.state), ['timed_out', 'timed_out']);
    assert.equal(done.events.find((e: any) => e.to === 'retrying').reason, 'attempt_timed_out');
  });

  it('cancel stops a running task and its processes', async () => {
    const pids = join(c.dir, 'cancel-pids');
    const id = await c.api.submit({ script: `sleep 300 & echo $! > ${pids}; echo started; wait` });
    // Wait until the task has printed "started": follow the log until the first bytes arrive.
    const res = await fetch(`${c.url}/v1/tasks/${id}/logs?follow=1`, { headers: { authorization: `Bearer ${c.api.token}` } });
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.equal(Buffer.from(first.value!).toString(), 'started\n');
    const r = await c.api.req('POST', `/v1/tasks/${id}/cancel`);
    assert.equal(r.status, 200);
    assert.equal(r.body.task.state, 'cancelled');
    // The follow stream ends once the attempt has stopped.
    while (!(await reader.read()).done);
    const t = await c.api.task(id);
    assert.equal(t.task.state, 'cancelled');
    assert.equal(t.attempts[0].state, 'cancelled');
    assert.equal(t.task.result.outcome, 'cancelled');
    const child = Number(readFileSync(pids, 'utf8').trim());
    assert.ok(!alive(child), 'the background child was killed');
    assert.equal((await c.api.req('POST', `/v1/tasks/${id}/cancel`)).status, 409);
  });

  it('retry puts a failed or cancelled task back with a fresh budget', async () => {
    const id = await c.api.submit({ command: 'false', retry: { maxRetries: 0 } });
    const first = await c.api.waitDone(id);
    assert.equal(first.task.state, 'failed');
    const r = await c.api.req('POST', `/v1/tasks/${id}/retry`);
    assert.equal(r.status, 200);
    assert.equal(r.body.task.retriesUsed, 0);
    const second = await c.api.waitDone(id);
    assert.equal(second.task.state, 'failed');
    assert.equal(second.attempts.length, 2);
    assert.ok(second.events.some((e: any) => e.reason === 'manual_retry'));
    const ok = await c.api.submit({ command: 'true' });
    await c.api.waitDone(ok);
    assert.equal((await c.api.req('POST', `/v1/tasks/${ok}/retry`)).status, 409);
  });
});
