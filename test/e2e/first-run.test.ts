/**
 * Issue 10, what a task runs and when, through real server and worker
 * processes and the real CLI: --cwd, start failures (relative and bare names,
 * no retry burned), #! scripts, run later (--in/--at, runAt/delay), rerun
 * (with authorization), and the exit information a signal or a timeout leaves.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BIN, startCluster, type Cluster } from './harness.js';

function drover(c: Cluster, args: string[], o: { cwd?: string; token?: string; stdin?: string } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: o.cwd,
      env: { ...process.env, DROVER_URL: c.url, DROVER_TOKEN: o.token ?? c.api.token },
      stdio: [o.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (o.stdin !== undefined) child.stdin!.end(o.stdin);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe('e2e: first run (cwd, start failures, #!, run later, rerun)', { timeout: 120_000 }, () => {
  let c: Cluster;
  let project: string;
  let userToken: string;
  let otherToken: string;
  before(async () => {
    c = await startCluster({ workers: 1, slots: 4 });
    project = join(c.dir, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'backup.sh'), '#!/bin/sh\necho "backed up in $(pwd)"\n', { mode: 0o755 });
    chmodSync(join(project, 'backup.sh'), 0o755);
    writeFileSync(join(project, 'report.py'), '#!/usr/bin/env python3\nimport sys\nprint("python", sys.version_info[0])\n');
    const mk = async (user: string) => {
      const r = await c.api.req('POST', '/v1/tokens', { name: `${user}-cli`, role: 'user', user });
      assert.equal(r.status, 201, r.text);
      return r.body.secret as string;
    };
    userToken = await mk('alice');
    otherToken = await mk('mallory');
  });
  after(async () => c?.close());

  it('submit --cwd DIR (relative, resolved here) runs ./backup.sh in that directory; show has the cwd', async () => {
    const sub = await drover(c, ['submit', '--cwd', 'project', '--', './backup.sh'], { cwd: c.dir });
    assert.equal(sub.code, 0, sub.stderr);
    assert.equal(sub.stderr, '', 'no warning with --cwd');
    const done = await c.api.waitDone(sub.stdout.trim());
    assert.equal(done.task.state, 'succeeded', done.logs);
    assert.equal(done.task.cwd, project);
    assert.equal(done.logs, `backed up in ${project}\n`);
    const show = await drover(c, ['show', '--json', done.task.id]);
    assert.equal(JSON.parse(show.stdout).task.cwd, project);
  });

  it('./backup.sh without --cwd: a warning here, then failed at once (start_failed, no retry used) naming the work directory', async () => {
    const sub = await drover(c, ['submit', '--retries', '2', '--', './backup.sh'], { cwd: project });
    assert.equal(sub.code, 0, sub.stderr);
    assert.match(sub.stderr, /^drover: warning: \.\/backup\.sh will resolve in the task's work directory on the worker, not in .*project here; use an absolute path \(.*project\/backup\.sh\) or --cwd DIR/);
    const done = await c.api.waitDone(sub.stdout.trim());
    assert.equal(done.task.state, 'failed');
    assert.equal(done.task.attempts, 1);
    assert.equal(done.task.retriesUsed, 0);
    assert.equal(done.task.result.outcome, 'start_failed');
    assert.match(
      done.task.result.error,
      /^cannot start \.\/backup\.sh: not found in the work directory \/\S+ \(a relative path resolves there; use an absolute path or --cwd\)$/,
    );
    assert.deepEqual(done.events.map((e: any) => e.reason), ['submitted', 'released', 'claimed', 'start_failed']);
    assert.equal(done.attempts[0].state, 'failed');
  });

  it('a bare name not on the PATH names the PATH searched; a missing cwd names the directory and the worker', async () => {
    const bare = await c.api.waitDone(await c.api.submit({ command: 'drover-no-such-tool', retry: { maxRetries: 3 } }));
    assert.equal(bare.task.result.outcome, 'start_failed');
    assert.equal(bare.task.attempts, 1);
    assert.match(bare.task.result.error, /^cannot start drover-no-such-tool: not found in PATH=\/usr\/local\/sbin:/);
    const gone = join(c.dir, 'no-such-dir');
    const cwd = await c.api.waitDone(await c.api.submit({ command: 'true', cwd: gone }));
    assert.equal(cwd.task.state, 'failed');
    assert.equal(cwd.task.result.error, `cannot start: the task's cwd ${gone} does not exist on worker w1`);
  });

  it('bad cwd input: the API says which field, the CLI which flag', async () => {
    const r = await c.api.req('POST', '/v1/tasks', { command: 'true', cwd: 'relative/dir' });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.field, 'cwd');
    const long = await c.api.req('POST', '/v1/tasks', { command: 'true', cwd: `/${'x'.repeat(5000)}` });
    assert.equal(long.status, 400);
    assert.equal(long.body.error.field, 'cwd');
    const cli = await drover(c, ['submit', '--cwd', '', '--', 'true']);
    assert.equal(cli.code, 2);
    assert.match(cli.stderr, /invalid --cwd/);
  });

  it('--script FILE with #! runs under that interpreter and is named after the file; --script - stays "script"', async () => {
    const sub = await drover(c, ['submit', '--wait', '--script', join(project, 'report.py')]);
    assert.equal(sub.code, 0, sub.stderr);
    assert.equal(sub.stdout, 'python 3\n');
    const ls = await drover(c, ['ls', '--json']);
    const row = JSON.parse(ls.stdout).tasks?.[0] ?? JSON.parse(ls.stdout)[0];
    assert.equal(row.name, 'report.py');
    const stdin = await drover(c, ['submit', '--json', '--script', '-'], { stdin: 'echo from stdin\n' });
    assert.equal(stdin.code, 0, stdin.stderr);
    const t = JSON.parse(stdin.stdout);
    assert.equal(t.name, 'script');
    assert.deepEqual(t.interpreter, ['sh']);
    const py = await c.api.req('POST', '/v1/tasks', { script: '#!/usr/bin/env python3\nprint(1)\n' });
    assert.deepEqual(py.body.task.interpreter, []);
  });

  it('submit --in 1s: ready (listed by ls --state ready), released by the scheduler when due, then runs', async () => {
    const sub = await drover(c, ['submit', '--json', '--in', '1s', '--', 'echo', 'later']);
    assert.equal(sub.code, 0, sub.stderr);
    const t = JSON.parse(sub.stdout);
    assert.equal(t.state, 'ready');
    const runAfter = Date.parse(t.runAfter);
    assert.ok(runAfter >= Date.parse(t.createdAt) + 1000, t.runAfter);
    const ls = await drover(c, ['ls', '--state', 'ready']);
    assert.match(ls.stdout, new RegExp(t.id));
    const done = await c.api.waitDone(t.id);
    assert.equal(done.task.state, 'succeeded');
    assert.equal(done.logs, 'later\n');
    const [submitted, released] = done.events;
    assert.deepEqual([submitted.reason, submitted.detail], ['submitted', { runAfter }]);
    assert.deepEqual([released.from, released.to, released.reason, released.actor, released.detail], ['ready', 'waiting', 'released', 'scheduler', { scheduled: true, runAfter }]);
    assert.ok(Date.parse(done.attempts[0].startedAt) >= runAfter);
  });

  it('--at in the future can be cancelled; a past runAt runs now; bad times name the flag or field', async () => {
    const sub = await drover(c, ['submit', '--json', '--at', new Date(Date.now() + 3_600_000).toISOString(), '--', 'echo', 'never']);
    assert.equal(sub.code, 0, sub.stderr);
    const t = JSON.parse(sub.stdout);
    assert.equal(t.state, 'ready');
    const cancel = await drover(c, ['cancel', t.id]);
    assert.equal(cancel.code, 0, cancel.stderr);
    assert.equal((await c.api.task(t.id)).task.state, 'cancelled');

    const past = await c.api.req('POST', '/v1/tasks', { command: 'echo', args: ['now'], runAt: '2020-01-01T00:00:00Z' });
    assert.equal(past.status, 201);
    assert.notEqual(past.body.task.state, 'ready');
    assert.equal((await c.api.waitDone(past.body.task.id)).task.state, 'succeeded');

    const bad = await drover(c, ['submit', '--at', 'teatime', '--', 'true']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^drover: invalid --at "teatime"/);
    const both = await drover(c, ['submit', '--at', '12:00', '--in', '5m', '--', 'true']);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /--at and --in are exclusive/);
    for (const [body, field] of [
      [{ command: 'true', runAt: '2026-12-01T10:00:00' }, 'runAt'],
      [{ command: 'true', runAt: new Date(Date.now() + 400 * 86_400_000).toISOString() }, 'runAt'],
      [{ command: 'true', delay: 'soonish' }, 'delay'],
      [{ command: 'true', delay: 1000, runAt: '2030-01-01T00:00:00Z' }, 'delay'],
    ] as const) {
      const r = await c.api.req('POST', '/v1/tasks', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.error.field, field, JSON.stringify(r.body));
    }
  });

  it('batch submit takes delay per item', async () => {
    const r = await c.api.req('POST', '/v1/tasks/batch', { tasks: [{ command: 'true' }, { command: 'true', delay: 3_600_000 }] });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(r.body.tasks.map((t: any) => t.state === 'ready'), [false, true]);
    const bad = await c.api.req('POST', '/v1/tasks/batch', { tasks: [{ command: 'true' }, { command: 'true', delay: 'x' }] });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'tasks[1].delay');
  });

  it('rerun: a fresh copy of a succeeded task, owned by its owner, rerunOf in its event; others get 404; idempotent', async () => {
    const sub = await drover(c, ['submit', '--wait', '--name', 'nightly', '--env', 'X=1', '--', 'sh', '-c', 'echo "run $X"'], { token: userToken });
    assert.equal(sub.code, 0, sub.stderr);
    const original = JSON.parse((await drover(c, ['ls', '--json'], { token: userToken })).stdout);
    const origId = (original.tasks ?? original)[0].id as string;

    const rr = await drover(c, ['rerun', origId], { token: userToken });
    assert.equal(rr.code, 0, rr.stderr);
    const copyId = rr.stdout.trim();
    assert.match(copyId, /^[0-9A-Z]{26}$/);
    assert.notEqual(copyId, origId);
    const copy = await c.api.waitDone(copyId);
    assert.equal(copy.task.state, 'succeeded');
    assert.equal(copy.logs, 'run 1\n');
    assert.equal(copy.task.owner, 'alice');
    assert.equal(copy.task.name, 'nightly');
    assert.deepEqual(copy.events[0].detail, { rerunOf: origId });

    // An admin's rerun is still alice's task.
    const byAdmin = await c.api.req('POST', `/v1/tasks/${origId}/rerun`);
    assert.equal(byAdmin.status, 201);
    assert.equal(byAdmin.body.task.owner, 'alice');

    const other = await drover(c, ['rerun', origId], { token: otherToken });
    assert.equal(other.code, 1);
    assert.match(other.stderr, /not found/);
    const otherApi = await c.api.req('POST', `/v1/tasks/${origId}/rerun`, undefined, otherToken);
    assert.equal(otherApi.status, 404);

    const k1 = await drover(c, ['rerun', '--json', '--idempotency-key', 'rerun-once', origId], { token: userToken });
    const k2 = await drover(c, ['rerun', '--json', '--idempotency-key', 'rerun-once', origId], { token: userToken });
    assert.equal(JSON.parse(k1.stdout).id, JSON.parse(k2.stdout).id);

    const wait = await drover(c, ['rerun', '--wait', origId], { token: userToken });
    assert.equal(wait.code, 0, wait.stderr);
    assert.equal(wait.stdout, 'run 1\n');

    const badId = await drover(c, ['rerun', 'nope'], { token: userToken });
    assert.equal(badId.code, 2);
    assert.match(badId.stderr, /invalid task id/);
    const missing = await c.api.req('POST', '/v1/tasks/01ARZ3NDEKTSV4RRFFQ69G5FAV/rerun');
    assert.equal(missing.status, 404);
  });

  it('a rerun of a failed scheduled task runs now', async () => {
    const t = (await c.api.req('POST', '/v1/tasks', { command: 'sh', args: ['-c', 'exit 4'], retry: { maxRetries: 0 }, delay: '1h' })).body.task;
    assert.equal(t.state, 'ready');
    const r = await c.api.req('POST', `/v1/tasks/${t.id}/rerun`);
    assert.equal(r.status, 201);
    assert.equal(r.body.task.runAfter, null);
    const done = await c.api.waitDone(r.body.task.id);
    assert.equal(done.task.state, 'failed');
    assert.equal(done.task.result.exitCode, 4);
  });

  it('exit information: a signal death carries its name, a timeout outcome timed_out', async () => {
    const killed = await c.api.waitDone(await c.api.submit({ command: 'sh', args: ['-c', 'kill -KILL $$'], retry: { maxRetries: 0 } }));
    assert.deepEqual([killed.task.result.outcome, killed.task.result.exitCode, killed.task.result.signal], ['failed', null, 'SIGKILL']);
    const timed = await c.api.waitDone(await c.api.submit({ command: 'sleep', args: ['30'], timeout: 200, retry: { maxRetries: 0 } }));
    assert.equal(timed.task.result.outcome, 'timed_out');
    assert.equal(timed.task.state, 'failed');
  });
});
