/**
 * The real CLI against a scripted fake API: what it sends, what it prints,
 * how it words server errors, and `--wait` / `logs -f` exit statuses and
 * streaming (including resuming a followed log after the stream drops).
 */
import assert from 'node:assert/strict';
import { NOT_AUTHENTICATED } from '../../src/cli/output.js';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { apiError, makeSummary, makeTask, runCli, sendJson, startFakeApi, TASK_ID, type FakeApi, type Handler } from './fake-api.js';

describe('CLI against a fake API', () => {
  let cwd: string;
  let api: FakeApi | null = null;
  const serve = async (h: Handler) => (api = await startFakeApi(h));
  const env = () => ({ DROVER_URL: api!.url, DROVER_TOKEN: 'tok' });

  before(() => {
    cwd = mkdtempSync(join(tmpdir(), 'drover-cli-api-'));
  });
  afterEach(async () => {
    await api?.close();
    api = null;
  });
  after(() => rmSync(cwd, { recursive: true, force: true }));

  it('submit sends the body with the bearer token and prints the id', async () => {
    await serve((_req, res) => sendJson(res, 201, { task: makeTask({ name: 'n' }) }));
    const r = await runCli(['submit', '--name', 'n', '--retries', '0', '--timeout', '2s', '--env', 'A=1', '--', 'sh', '-c', 'echo $A'], { env: env(), cwd });
    assert.equal(r.stderr, '');
    assert.equal(r.code, 0);
    assert.equal(r.stdout, `${TASK_ID}\n`);
    const [req] = api!.requests;
    assert.equal(req!.method, 'POST');
    assert.equal(req!.path, '/v1/tasks');
    assert.equal(req!.headers.authorization, 'Bearer tok');
    assert.deepEqual(req!.body, { name: 'n', retry: { maxRetries: 0 }, timeout: 2000, env: { A: '1' }, command: 'sh', args: ['-c', 'echo $A'] });
  });

  it('submit always sends an Idempotency-Key: a fresh random one per submit, or --idempotency-key', async () => {
    await serve((_req, res) => sendJson(res, 201, { task: makeTask() }));
    assert.equal((await runCli(['submit', '--', 'true'], { env: env(), cwd })).code, 0);
    assert.equal((await runCli(['submit', '--', 'true'], { env: env(), cwd })).code, 0);
    const r = await runCli(['submit', '--idempotency-key', 'nightly-2026-01-01', '--require', 'gpu=a100', '--require', 'zone=eu', '--', 'true'], { env: env(), cwd });
    assert.equal(r.code, 0, r.stderr);
    const [a, b, c] = api!.requests.map((q) => q.headers['idempotency-key']);
    assert.match(String(a), /^[\x21-\x7e]{1,255}$/);
    assert.match(String(b), /^[\x21-\x7e]{1,255}$/);
    assert.notEqual(a, b);
    assert.equal(c, 'nightly-2026-01-01');
    assert.deepEqual(api!.requests[2]!.body, { requires: { gpu: 'a100', zone: 'eu' }, command: 'true' });
  });

  it('a replayed submit (200) prints the first task; a conflicting one names the header, exit 1', async () => {
    await serve((req, res) =>
      req.headers['idempotency-key'] === 'k1'
        ? sendJson(res, 200, { task: makeTask() })
        : apiError(res, 409, 'conflict', 'Idempotency-Key "k2" was already used for a different request body; use a new key for a new task'),
    );
    const ok = await runCli(['submit', '--idempotency-key', 'k1', '--', 'true'], { env: env(), cwd });
    assert.deepEqual([ok.code, ok.stdout], [0, `${TASK_ID}\n`]);
    const conflict = await runCli(['submit', '--idempotency-key', 'k2', '--', 'true'], { env: env(), cwd });
    assert.equal(conflict.code, 1);
    assert.equal(conflict.stderr, 'drover: conflict: Idempotency-Key "k2" was already used for a different request body; use a new key for a new task\n');
  });

  it('submit retries after a 503 and after a dropped connection, with the same key', async () => {
    let n = 0;
    await serve((_req, res) => {
      n++;
      if (n === 1) return apiError(res, 503, 'unavailable', 'store busy');
      if (n === 2) return void res.socket?.destroy(); // no answer at all
      sendJson(res, 201, { task: makeTask() });
    });
    const r = await runCli(['submit', '--', 'true'], { env: env(), cwd });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${TASK_ID}\n`);
    assert.equal(api!.requests.length, 3);
    const keys = new Set(api!.requests.map((q) => q.headers['idempotency-key']));
    assert.equal(keys.size, 1, 'every retry carries the first key');
  });

  it('ls, show and token ls print an escape sequence in task data as visible text', async () => {
    const evil = 'x\x1b[2J\x1b]0;pwned\x07\u009b31m';
    await serve((req, res) => {
      if (req.path === '/v1/tasks') return sendJson(res, 200, { tasks: [makeSummary({ name: evil, workerId: evil })], nextCursor: null });
      if (req.path === '/v1/tokens') return sendJson(res, 200, { tokens: [{ id: 'abcdef0123456789', name: evil, user: 'u\x1b[1m', role: 'user', createdAt: '2026-01-01T00:00:00Z', revokedAt: null, lastUsedAt: '2026-01-01T00:01:00Z' }] });
      sendJson(res, 200, { task: makeTask({ name: evil, labels: { k: evil } }), attempts: [], events: [] });
    });
    for (const args of [['ls', '--wide'], ['ls'], ['show', TASK_ID], ['token', 'ls']]) {
      const r = await runCli(args, { env: env(), cwd });
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stdout, /[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f]/, args.join(' '));
      // Fitted to 80 columns, `ls` may cut the name: the escaped text it shows starts the same.
      assert.ok(r.stdout.includes(args.join(' ') === 'ls' ? 'x\\x1b[2J' : 'x\\x1b[2J\\x1b]0;pwned\\x07\\x9b31m'), `${args.join(' ')}: ${r.stdout}`);
    }
    const tokens = await runCli(['token', 'ls'], { env: env(), cwd });
    assert.match(tokens.stdout, /2026-01-01T00:01:00Z/, 'LAST USED column');
  });

  it('logs piped to a file or pipe are the raw bytes', async () => {
    await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('\x1b[31mred\x1b[0m\r\n');
    });
    const r = await runCli(['logs', TASK_ID], { env: env(), cwd });
    assert.equal(r.stdout, '\x1b[31mred\x1b[0m\r\n');
  });

  it('submit --script - reads stdin', async () => {
    await serve((_req, res) => sendJson(res, 201, { task: makeTask() }));
    const r = await runCli(['submit', '--script', '-', '--interpreter', 'python3 -u', '--json'], { env: env(), cwd, input: 'print(1)\n' });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).id, TASK_ID);
    assert.deepEqual(api!.requests[0]!.body, { script: 'print(1)\n', interpreter: ['python3', '-u'] });
  });

  it('a 400 from the server becomes "invalid <field>: <reason>", exit 2', async () => {
    await serve((_req, res) => apiError(res, 400, 'invalid_input', 'env.A: too long', { field: 'env.A', reason: 'too long' }));
    const r = await runCli(['submit', '--', 'true'], { env: env(), cwd });
    assert.equal(r.code, 2);
    assert.equal(r.stderr, 'drover: invalid env.A: too long\n');
  });

  it('a 401 without a token says how to authenticate', async () => {
    await serve((_req, res) => apiError(res, 401, 'unauthorized', 'missing bearer token'));
    const r = await runCli(['ls'], { env: { DROVER_URL: api!.url }, cwd });
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `drover: ${NOT_AUTHENTICATED}\n`);
    assert.match(r.stderr, /drover login URL.*drover dev.*DROVER_URL and DROVER_TOKEN/);
    assert.equal(api!.requests[0]!.headers.authorization, undefined);
  });

  it('uses the nearest .drover/credentials.json and names it when the token is rejected', async () => {
    await serve((_req, res) => apiError(res, 401, 'unauthorized', 'invalid or revoked token'));
    const project = mkdtempSync(join(tmpdir(), 'drover-proj-'));
    try {
      mkdirSync(join(project, '.drover'));
      mkdirSync(join(project, 'sub'));
      writeFileSync(join(project, '.drover', 'credentials.json'), JSON.stringify({ url: api!.url, token: 'from-file' }));
      const r = await runCli(['ls'], { cwd: join(project, 'sub') });
      assert.equal(r.code, 1);
      assert.equal(api!.requests[0]!.headers.authorization, 'Bearer from-file');
      assert.match(r.stderr, /^drover: not authenticated: http:\/\/127\.0\.0\.1:\d+ rejected the token from .*\.drover\/credentials\.json \(invalid or revoked token\)\n$/);
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });

  it('404 and 409 are one line, exit 1', async () => {
    await serve((req, res) =>
      req.path.endsWith('/cancel') ? apiError(res, 409, 'conflict', `task ${TASK_ID} already ended`) : apiError(res, 404, 'not_found', `task ${TASK_ID} not found`),
    );
    const c = await runCli(['cancel', TASK_ID], { env: env(), cwd });
    assert.deepEqual([c.code, c.stderr], [1, `drover: conflict: task ${TASK_ID} already ended\n`]);
    const s = await runCli(['show', TASK_ID], { env: env(), cwd });
    assert.deepEqual([s.code, s.stderr], [1, `drover: task ${TASK_ID} not found\n`]);
  });

  it('cancel and retry print the new state', async () => {
    await serve((req, res) => sendJson(res, 200, { task: makeTask({ state: req.path.endsWith('/cancel') ? 'cancelled' : 'waiting' }) }));
    assert.equal((await runCli(['cancel', TASK_ID], { env: env(), cwd })).stdout, 'cancelled\n');
    assert.equal((await runCli(['retry', TASK_ID], { env: env(), cwd })).stdout, 'waiting\n');
    assert.deepEqual(
      api!.requests.map((r) => `${r.method} ${r.path}`),
      [`POST /v1/tasks/${TASK_ID}/cancel`, `POST /v1/tasks/${TASK_ID}/retry`],
    );
  });

  it('ls prints a table and --all follows cursors', async () => {
    const ids = ['01JF0000000000000000000003', '01JF0000000000000000000002', '01JF0000000000000000000001'];
    await serve((req, res) => {
      const cursor = req.query.get('cursor');
      const start = cursor ? ids.indexOf(cursor) + 1 : 0;
      const page = ids.slice(start, start + 2);
      const next = start + 2 < ids.length ? page[page.length - 1]! : null;
      const ended = new Date().toISOString();
      sendJson(res, 200, { tasks: page.map((id) => makeSummary({ id, state: 'failed', attempts: 2, workerId: 'w1', startedAt: ended, endedAt: ended, exitCode: 3, durationMs: 5 })), nextCursor: next });
    });
    const one = await runCli(['ls', '--limit', '2', '--state', 'failed'], { env: env(), cwd });
    assert.equal(one.code, 0, one.stderr);
    const lines = one.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID\s+NAME\s+STATE\s+WORKER\s+EXIT\s+DURATION\s+AGE$/);
    // The ids differ only at the end: the short form grows until they are told apart.
    // Full ids: the table fits 80 columns with them.
    assert.match(lines[1]!, /^01JF0000000000000000000003\s+sh\s+failed\s+w1\s+3\s+5ms\s+\d+s$/);
    const wide = await runCli(['ls', '--wide', '--limit', '2'], { env: env(), cwd });
    assert.match(wide.stdout.split('\n')[1]!, /^01JF0000000000000000000003\s/);
    assert.equal(lines.length, 3);
    assert.equal(api!.requests[0]!.query.get('state'), 'failed');
    assert.equal(api!.requests[0]!.query.get('limit'), '2');

    const all = await runCli(['ls', '--limit', '2', '--all', '--json'], { env: env(), cwd });
    assert.deepEqual(JSON.parse(all.stdout).tasks.map((t: { id: string }) => t.id), ids);

    const byId = await runCli(['ls', '--id', '01jf'], { env: env(), cwd });
    assert.equal(byId.code, 0, byId.stderr);
    assert.equal(api!.requests[api!.requests.length - 1]!.query.get('id'), '01JF', 'the prefix is sent upper-cased');
    const n = api!.requests.length;
    const bad = await runCli(['ls', '--id', '01IL'], { env: env(), cwd });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^drover: invalid --id "01IL"/);
    assert.equal(api!.requests.length, n, 'nothing sent for a bad prefix');
  });

  it('show prints fields, attempts and events', async () => {
    await serve((_req, res) =>
      sendJson(res, 200, {
        task: makeTask({ state: 'succeeded', attempts: 1, result: { outcome: 'succeeded', attempt: 1, exitCode: 0, signal: null, error: null, durationMs: 4 } }),
        attempts: [{ id: 1, number: 1, workerId: 'w1', state: 'succeeded', startedAt: new Date().toISOString(), endedAt: new Date().toISOString(), exitCode: 0, signal: null, error: null, durationMs: 4 }],
        events: [{ id: 1, from: 'running', to: 'succeeded', reason: 'attempt_succeeded', actor: 'worker:w1', at: new Date().toISOString(), detail: { attempt: 1, exitCode: 0 } }],
      }),
    );
    const r = await runCli(['show', TASK_ID], { env: env(), cwd });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^id:\s+01JF0000000000000000000000$/m);
    assert.match(r.stdout, /^result:\s+succeeded, attempt 1, exit 0, 4ms$/m);
    assert.match(r.stdout, /^1\s+w1\s+succeeded\s+0\s/m);
    assert.match(r.stdout, /^running\s+succeeded\s+attempt_succeeded\s+worker:w1\s+\S+\s+attempt=1 exitCode=0$/m);
  });

  /** A task that prints `log` and ends as `final`, for --wait. */
  const finishedTask = (log: string, final: Record<string, unknown>): Handler => (req, res) => {
    if (req.method === 'POST') return sendJson(res, 201, { task: makeTask() });
    if (req.path.endsWith('/logs')) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return void res.end(log);
    }
    sendJson(res, 200, { task: makeTask(final), attempts: [], events: [] });
  };

  it('submit --wait streams the log and exits with the task\'s exit code', async () => {
    await serve(finishedTask('hello\n', { state: 'failed', result: { outcome: 'failed', attempt: 4, exitCode: 3, signal: null, error: null, durationMs: 1 } }));
    const r = await runCli(['submit', '--wait', '--', 'sh', '-c', 'echo hello; exit 3'], { env: env(), cwd });
    assert.equal(r.stdout, 'hello\n');
    assert.match(r.stderr, /^drover: task \w+ failed: exit code 3 \(attempts \d+, duration 1ms\)\n$/);
    assert.equal(r.code, 3);
    assert.equal(api!.requests[1]!.query.get('follow'), '1');
  });

  it('submit --wait exits 0 on success', async () => {
    await serve(finishedTask('ok\n', { state: 'succeeded', result: { outcome: 'succeeded', attempt: 1, exitCode: 0, signal: null, error: null, durationMs: 1 } }));
    const r = await runCli(['submit', '--wait', '--', 'true'], { env: env(), cwd });
    assert.deepEqual([r.code, r.stdout, r.stderr], [0, 'ok\n', '']);
  });

  it('submit --wait exits 124 on a timeout, 128+n on a signal, 1 on a cancel or lost worker, with one summary line', async () => {
    const cases: Array<[Record<string, unknown>, number, RegExp]> = [
      [{ state: 'failed', attempts: 1, result: { outcome: 'timed_out', attempt: 1, exitCode: null, signal: 'SIGTERM', error: 'timed out after 5000 ms', durationMs: 5000 } }, 124, /^drover: task \w+ failed: timed out after 5000 ms \(attempts 1, duration 5s\)\n$/],
      [{ state: 'failed', attempts: 2, result: { outcome: 'failed', attempt: 2, exitCode: null, signal: 'SIGKILL', error: null, durationMs: 1 } }, 137, /^drover: task \w+ failed: killed by SIGKILL \(attempts 2, duration 1ms\)\n$/],
      [{ state: 'cancelled', result: null }, 1, /^drover: task \w+ cancelled: cancelled \(attempts \d+, duration -\)\n$/],
      [{ state: 'failed', attempts: 6, result: { outcome: 'lost', attempt: 6, exitCode: null, signal: null, error: 'worker lost 6 times (cap 5)', durationMs: null } }, 1, /^drover: task \w+ failed: worker lost: worker lost 6 times \(cap 5\) \(attempts 6, duration -\)\n$/],
    ];
    for (const [final, code, message] of cases) {
      await serve(finishedTask('', final));
      const r = await runCli(['submit', '--wait', '--', 'sleep', '9'], { env: env(), cwd });
      assert.equal(r.code, code, r.stderr);
      assert.match(r.stderr, message);
      await api!.close();
      api = null;
    }
  });

  it('submit --wait --json prints only the final task', async () => {
    await serve(finishedTask('noise\n', { state: 'succeeded', result: { outcome: 'succeeded', attempt: 1, exitCode: 0, signal: null, error: null, durationMs: 1 } }));
    const r = await runCli(['submit', '--wait', '--json', '--', 'true'], { env: env(), cwd });
    assert.equal(r.code, 0);
    assert.equal(JSON.parse(r.stdout).state, 'succeeded');
  });

  it('logs -f resumes after the stream drops, without repeating output', async () => {
    let follows = 0;
    await serve((req, res) => {
      if (req.path.endsWith('/logs')) {
        follows++;
        res.writeHead(200, { 'content-type': 'text/plain' });
        // First connection: part of the log, then the stream ends while the task still runs.
        return void res.end(follows === 1 ? 'line 1\nline' : 'line 1\nline 2\nline 3\n');
      }
      sendJson(res, 200, { task: makeTask({ state: follows === 1 ? 'running' : 'succeeded', attempts: 2 }), attempts: [], events: [] });
    });
    const r = await runCli(['logs', '-f', '--attempt', '2', TASK_ID], { env: env(), cwd });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'line 1\nline 2\nline 3\n');
    assert.equal(follows, 2);
    const logReqs = api!.requests.filter((q) => q.path.endsWith('/logs'));
    assert.ok(logReqs.every((q) => q.query.get('follow') === '1' && q.query.get('attempt') === '2'));
  });

  it('logs --attempt N past the task\'s attempts: an error naming how many there are, exit 1, no log read', async () => {
    await serve((req, res) => {
      if (req.path.endsWith('/logs')) return void res.end('never');
      sendJson(res, 200, { task: makeTask({ state: 'failed', attempts: 8 }), attempts: [], events: [] });
    });
    const r = await runCli(['logs', '--attempt', '50', TASK_ID], { env: env(), cwd });
    assert.deepEqual([r.code, r.stdout, r.stderr], [1, '', `drover: task ${TASK_ID} has 8 attempts: no attempt 50\n`]);
    assert.equal(api!.requests.filter((q) => q.path.endsWith('/logs')).length, 0);
    const ok = await runCli(['logs', '--attempt', '8', TASK_ID], { env: env(), cwd });
    assert.deepEqual([ok.code, ok.stdout], [0, 'never']);
  });

  it('logs without -f copies the log once', async () => {
    await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('--- drover: attempt 2 ---\nbytes\n');
    });
    const r = await runCli(['logs', TASK_ID], { env: env(), cwd });
    assert.deepEqual([r.code, r.stdout], [0, '--- drover: attempt 2 ---\nbytes\n']);
    assert.equal(api!.requests[0]!.query.get('follow'), null);
  });

  it('token create prints the secret on stdout and the id on stderr', async () => {
    await serve((_req, res) =>
      sendJson(res, 201, { token: { id: 'abcdef0123456789', name: 'ci', user: 'ci', role: 'worker', createdAt: new Date().toISOString(), revokedAt: null, lastUsedAt: null }, secret: 'drv_secret' }),
    );
    const r = await runCli(['token', 'create', '--name', 'ci', '--role', 'worker'], { env: env(), cwd });
    assert.equal(r.code, 0);
    assert.equal(r.stdout, 'drv_secret\n');
    assert.match(r.stderr, /abcdef0123456789.*will not be shown again/);
    assert.deepEqual(api!.requests[0]!.body, { name: 'ci', role: 'worker' });
  });

  it('token revoke and workers', async () => {
    await serve((req, res) => {
      if (req.method === 'DELETE') return sendJson(res, 200, { token: { id: 'abcdef0123456789', name: 'ci', user: 'ci', role: 'user', createdAt: '2026-01-01T00:00:00Z', revokedAt: '2026-01-02T00:00:00Z', lastUsedAt: null } });
      const now = new Date().toISOString();
      const attempt = (n: number) => ({ attemptId: n, taskId: TASK_ID, taskName: `t${n}`, startedAt: now });
      sendJson(res, 200, { workers: [{ id: 'w1', hostname: 'box', slots: 4, slotsUsed: 3, labels: { gpu: '1' }, state: 'lost', connectedAt: now, lastSeenAt: now, drainingAt: null, runningAttempts: [attempt(1), attempt(2)] }] });
    });
    const rv = await runCli(['token', 'revoke', 'abcdef0123456789'], { env: env(), cwd });
    assert.equal(rv.stdout, 'revoked abcdef0123456789 (ci)\n');
    // GET /v1/me first (is it the token in use? not this one), then the DELETE.
    assert.deepEqual(api!.requests.map((q) => `${q.method} ${q.path}`), ['GET /v1/me', 'DELETE /v1/tokens/abcdef0123456789']);
    const w = await runCli(['workers'], { env: env(), cwd });
    // Slots used/total counts everyone's attempts; RUNNING the ones this caller may see.
    assert.match(w.stdout, /^w1\s+box\s+lost\s+3\/4\s+2\s+gpu=1\s/m);
  });
});
