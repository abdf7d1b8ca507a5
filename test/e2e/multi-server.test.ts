/**
 * Several `drover server` processes on one PostgreSQL database behave as one
 * system: every task runs once per attempt, listings, logs and cancel work
 * through whichever server answers, and a server killed with -9 loses
 * nothing while its workers move to the other server.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Api, startProc, stopAll, waitWorker, type Proc } from './harness.js';
import { createTestDatabase, requirePostgres } from '../support/postgres.js';

const PG = await requirePostgres();
const ADMIN = `drv_test_${randomBytes(16).toString('hex')}`;

interface Server {
  proc: Proc;
  url: string;
  api: Api;
}

async function startServer(db: string, port = 0): Promise<Server> {
  const { proc, match } = await startProc(
    ['server', '--db', db, '--port', String(port), '--lease', '10s', '--heartbeat', '1s', '--log-level', 'warn'],
    { DROVER_ADMIN_TOKEN: ADMIN },
    /listening on (http:\/\/127\.0\.0\.1:\d+)/,
  );
  const url = match![1]!;
  return { proc, url, api: new Api(url, ADMIN) };
}

async function startWorker(servers: Server[], id: string, token: string, dir: string, slots = 4): Promise<Proc> {
  const args = ['worker', ...servers.flatMap((s) => ['--server', s.url]), '--slots', String(slots), '--id', id, '--work-dir', join(dir, id)];
  const { proc } = await startProc(args, { DROVER_TOKEN: token });
  await waitWorker(servers[0]!.api, id, proc);
  return proc;
}

async function submitMany(servers: Server[], n: number, spec: (i: number) => Record<string, unknown>): Promise<string[]> {
  const ids: string[] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < n) {
        const i = next++;
        ids[i] = await servers[i % servers.length]!.api.submit(spec(i));
      }
    }),
  );
  return ids;
}

/** Pages through every task (newest first) through one server. */
async function allTasks(api: Api): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  do {
    const r: any = await api.req('GET', `/v1/tasks?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
    out.push(...r.body.tasks);
    cursor = r.body.nextCursor;
  } while (cursor);
  return out;
}

async function settle(api: Api, n: number, timeoutMs = 120_000): Promise<any[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const tasks = await allTasks(api);
    if (tasks.length >= n && tasks.every((t) => ['succeeded', 'failed', 'cancelled'].includes(t.state))) return tasks;
    if (Date.now() > deadline) {
      const counts: Record<string, number> = {};
      for (const t of tasks) counts[t.state] = (counts[t.state] ?? 0) + 1;
      throw new Error(`not settled after ${timeoutMs} ms: ${JSON.stringify(counts)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('e2e: two servers on one PostgreSQL database', { skip: PG ? false : 'DROVER_TEST_SKIP_POSTGRES=1' }, () => {
  let db: { url: string; drop(): Promise<void> };
  let dir: string;
  let a: Server;
  let b: Server;
  let workerToken: string;
  const workers = new Map<string, Proc>();
  before(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), 'drover-multi-'));
    [a, b] = await Promise.all([startServer(db.url), startServer(db.url)]);
    workerToken = (await a.api.req('POST', '/v1/tokens', { name: 'w', role: 'worker' })).body.secret;
  });
  after(async () => {
    await stopAll();
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('runs 2,000 tasks submitted through both servers: each succeeds once, run by one attempt', async () => {
    workers.set('a1', await startWorker([a, b], 'a1', workerToken, dir));
    workers.set('a2', await startWorker([a, b], 'a2', workerToken, dir));
    workers.set('b1', await startWorker([b, a], 'b1', workerToken, dir));
    workers.set('b2', await startWorker([b, a], 'b2', workerToken, dir));
    const ids = await submitMany([a, b], 2000, (i) => ({ command: 'true', name: `bulk-${i}` }));
    const tasks = await settle(b.api, 2000);
    const byId = new Map(tasks.map((t) => [t.id, t]));
    for (const id of ids) {
      const t = byId.get(id);
      assert.ok(t, `task ${id} missing`);
      assert.equal(t.state, 'succeeded', `${id}: ${t.state}`);
      if (t.attempts === 1) continue;
      // More than one only when a prefetch gave a queued attempt back unstarted (take-back, or the
      // default `--prefetch auto` withdrawn): never a second run.
      const d = await a.api.task(id);
      const ran = d.attempts.filter((x: any) => !/^given back unstarted: /.test(x.error ?? ''));
      if (ran.length !== 1 || d.events.filter((e: any) => e.reason === 'returned').length !== t.attempts - 1) {
        assert.fail(`${id} had ${t.attempts} attempts: ${JSON.stringify(d.events)}`);
      }
    }
    // Both servers' workers did work, and both servers list the same tasks.
    const ran = new Set<string>();
    for (const id of ids.slice(0, 200)) ran.add((await a.api.task(id)).attempts[0].workerId);
    assert.ok(ran.size >= 3, `work spread over ${[...ran].join(',')}`);
    assert.deepEqual((await allTasks(a.api)).map((t) => t.id), tasks.map((t) => t.id));
  });

  it('logs and cancel work through the server the task\'s worker is not connected to', async () => {
    // Only b1/b2 (connected to b) and a1/a2 exist; pin by asking a to follow a task while it runs anywhere.
    const id = await b.api.submit({ script: 'echo started; sleep 300' });
    const res = await fetch(`${a.url}/v1/tasks/${id}/logs?follow=1`, { headers: { authorization: `Bearer ${ADMIN}` } });
    const reader = res.body!.getReader();
    assert.equal(Buffer.from((await reader.read()).value!).toString(), 'started\n');
    const detail = await a.api.task(id);
    const workerId = detail.attempts[0].workerId;
    // Cancel through the server the worker is NOT connected to.
    const other = workerId.startsWith('a') ? b : a;
    assert.equal((await other.api.req('POST', `/v1/tasks/${id}/cancel`)).status, 200);
    while (!(await reader.read()).done);
    const done = await other.api.task(id);
    assert.equal(done.task.state, 'cancelled');
    assert.equal(done.attempts[0].state, 'cancelled');
  });

  it('kill -9 of a server mid-run loses nothing; its workers reconnect to the other', async () => {
    const before = (await allTasks(b.api)).length;
    const ids: string[] = [];
    const submitting = (async () => {
      for (let i = 0; i < 300; i++) {
        const via = i % 2 === 0 ? b : a;
        try {
          ids.push(await via.api.submit({ command: 'sh', args: ['-c', 'sleep 0.05'], name: `kill-${i}` }));
        } catch {
          // Submits to the killed server fail: only acknowledged ones count.
        }
      }
    })();
    await new Promise((r) => setTimeout(r, 1500));
    await a.proc.stop('SIGKILL');
    await submitting;
    // a1 and a2 listed a first: they must reconnect to b and take work from it.
    const after = await submitMany([b], 100, () => ({ command: 'sh', args: ['-c', 'sleep 0.05'] }));
    ids.push(...after);
    const ranAfter = new Set<string>();
    for (const id of after) {
      const d = await b.api.waitDone(id);
      ranAfter.add(d.attempts.at(-1).workerId);
    }
    assert.ok(ranAfter.has('a1') || ranAfter.has('a2'), `after the kill, work ran only on ${[...ranAfter].join(',')}`);
    const tasks = await settle(b.api, before + ids.length);
    const byId = new Map(tasks.map((t) => [t.id, t]));
    for (const id of ids) {
      const t = byId.get(id);
      assert.ok(t, `acknowledged task ${id} lost`);
      assert.equal(t.state, 'succeeded', `${id}: ${t.state}`);
      const d = await b.api.task(id);
      assert.equal(d.attempts.filter((x: any) => x.state === 'succeeded').length, 1, `${id} succeeded more than once`);
      assert.equal(d.events.filter((e: any) => e.reason === 'attempt_succeeded').length, 1);
    }
  });
});
