/** DroverClient over a fake API: routes, auth header, typed errors, streaming logs. */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { DroverClient } from '../../src/client/client.js';
import { ApiError, ConnectionError } from '../../src/client/errors.js';
import { SseParser } from '../../src/client/sse-parser.js';
import { apiError, closedPort, makeSummary, makeTask, sendJson, startFakeApi, TASK_ID, type FakeApi, type Handler } from './fake-api.js';

describe('DroverClient', () => {
  let api: FakeApi | null = null;
  const serve = async (h: Handler) => (api = await startFakeApi(h));
  afterEach(async () => {
    await api?.close();
    api = null;
  });

  it('calls every route with the documented method, path and body', async () => {
    const token = { id: 'abcdef0123456789', name: 'n', user: 'u', role: 'user', createdAt: 't', revokedAt: null, lastUsedAt: null };
    await serve((req, res) => {
      const key = `${req.method} ${req.path}`;
      if (key === 'POST /v1/tasks') return sendJson(res, 201, { task: makeTask() });
      if (key === 'GET /v1/tasks') return sendJson(res, 200, { tasks: [makeSummary()], nextCursor: null });
      if (key === `GET /v1/tasks/${TASK_ID}`) return sendJson(res, 200, { task: makeTask(), attempts: [], events: [] });
      if (key.endsWith('/cancel')) return sendJson(res, 200, { task: makeTask({ state: 'cancelled' }) });
      if (key.endsWith('/retry')) return sendJson(res, 200, { task: makeTask({ state: 'waiting' }) });
      if (key === 'POST /v1/tokens') return sendJson(res, 201, { token, secret: 'drv_x' });
      if (key === 'GET /v1/tokens') return sendJson(res, 200, { tokens: [token] });
      if (key === `DELETE /v1/tokens/${token.id}`) return sendJson(res, 200, { token: { ...token, revokedAt: 't' } });
      if (key === 'GET /v1/workers') return sendJson(res, 200, { workers: [] });
      if (key === 'GET /healthz') return sendJson(res, 200, { ok: true });
      apiError(res, 404, 'not_found', key);
    });
    const c = new DroverClient({ url: api!.url + '/', token: 'secret' });
    assert.equal((await c.submit({ command: 'true' })).id, TASK_ID);
    assert.equal((await c.listTasks({ state: 'failed', limit: 5 })).tasks.length, 1);
    assert.equal((await c.getTask(TASK_ID)).task.id, TASK_ID);
    assert.equal((await c.cancel(TASK_ID)).state, 'cancelled');
    assert.equal((await c.retry(TASK_ID)).state, 'waiting');
    assert.equal((await c.createToken({ name: 'n', role: 'user' })).secret, 'drv_x');
    assert.equal((await c.listTokens()).length, 1);
    assert.equal((await c.revokeToken(token.id)).revokedAt, 't');
    assert.deepEqual(await c.listWorkers(), []);
    assert.deepEqual(await c.healthz(), { ok: true });

    const reqs = api!.requests;
    assert.ok(reqs.every((r) => r.headers.authorization === 'Bearer secret'));
    assert.deepEqual(reqs[0]!.body, { command: 'true' });
    assert.equal(reqs[0]!.headers['content-type'], 'application/json');
    assert.equal(reqs[1]!.query.toString(), 'state=failed&limit=5');
  });

  it('throws ApiError with status, code, field and reason from the JSON body', async () => {
    await serve((_req, res) => apiError(res, 400, 'invalid_input', 'retry.maxRetries: must be <= 100', { field: 'retry.maxRetries', reason: 'must be <= 100' }));
    const c = new DroverClient({ url: api!.url, token: 't' });
    await assert.rejects(c.submit({ command: 'x', retry: { maxRetries: 1000 } }), (e: unknown) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.status, 400);
      assert.equal(e.code, 'invalid_input');
      assert.equal(e.field, 'retry.maxRetries');
      assert.equal(e.reason, 'must be <= 100');
      assert.equal(e.message, 'retry.maxRetries: must be <= 100');
      return true;
    });
  });

  it('copes with an error body that is not Drover JSON', async () => {
    await serve((_req, res) => {
      res.writeHead(502, 'Bad Gateway', { 'content-type': 'text/html' });
      res.end('<html>\n<body>upstream down</body></html>');
    });
    const c = new DroverClient({ url: api!.url });
    await assert.rejects(c.listTasks(), (e: unknown) => e instanceof ApiError && e.status === 502 && e.code === 'http_502' && /Bad Gateway: <html> <body>upstream down/.test(e.message));
  });

  it('network failure is a ConnectionError naming the URL and the cause', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const c = new DroverClient({ url });
    await assert.rejects(c.healthz(), (e: unknown) => e instanceof ConnectionError && e.message === `cannot reach Drover at ${url}: ECONNREFUSED`);
  });

  it('times out a JSON request that never answers', async () => {
    await serve(() => {
      /* never answers */
    });
    const c = new DroverClient({ url: api!.url, timeoutMs: 100 });
    await assert.rejects(c.healthz(), (e: unknown) => e instanceof ConnectionError && /request timed out/.test(e.message));
  });

  it('logs() returns the open stream so follow can read as bytes arrive', async () => {
    let finish: () => void = () => {};
    await serve((req, res) => {
      assert.equal(req.query.get('follow'), '1');
      assert.equal(req.query.get('attempt'), '2');
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first\n');
      finish = () => res.end('second\n');
    });
    const c = new DroverClient({ url: api!.url, token: 't' });
    const res = await c.logs(TASK_ID, { follow: true, attempt: 2 });
    const reader = res.chunks()[Symbol.asyncIterator]();
    const first = await reader.next();
    assert.equal(Buffer.from(first.value!).toString(), 'first\n');
    finish();
    let rest = '';
    for (;;) {
      const { done, value } = await reader.next();
      if (done) break;
      rest += Buffer.from(value).toString();
    }
    assert.equal(rest, 'second\n');
  });

  it('logs() throws ApiError for a non-2xx answer', async () => {
    await serve((_req, res) => apiError(res, 404, 'not_found', `task ${TASK_ID} not found`));
    const c = new DroverClient({ url: api!.url, token: 't' });
    await assert.rejects(c.logs(TASK_ID), (e: unknown) => e instanceof ApiError && e.status === 404 && e.code === 'not_found');
  });

  it('submitTask says whether the task was created (201) or replayed (200), and sends the key', async () => {
    let n = 0;
    const task = makeTask();
    await serve((_req, res) => sendJson(res, ++n === 1 ? 201 : 200, { task }));
    const c = new DroverClient({ url: api!.url, token: 't' });
    assert.deepEqual(await c.submitTask({ command: 'true' }, { idempotencyKey: 'k-1' }), { task, created: true });
    assert.equal((await c.submitTask({ command: 'true' }, { idempotencyKey: 'k-1' })).created, false);
    assert.deepEqual(api!.requests.map((r) => r.headers['idempotency-key']), ['k-1', 'k-1']);
  });

  it('an idempotent submit is retried a bounded number of times on 503, then the 503 is thrown', async () => {
    await serve((_req, res) => apiError(res, 503, 'unavailable', 'disk full'));
    const c = new DroverClient({ url: api!.url, token: 't', submitRetryDelaysMs: [1, 2, 3] });
    await assert.rejects(c.submit({ command: 'true' }, { idempotencyKey: 'k' }), (e: unknown) => e instanceof ApiError && e.status === 503);
    assert.equal(api!.requests.length, 4);
    assert.ok(api!.requests.every((r) => r.headers['idempotency-key'] === 'k'));
  });

  it('a submit without a key is never retried; other errors are not retried either', async () => {
    await serve((req, res) => (req.headers['idempotency-key'] ? apiError(res, 409, 'conflict', 'Idempotency-Key reused') : apiError(res, 503, 'unavailable', 'busy')));
    const c = new DroverClient({ url: api!.url, token: 't', submitRetryDelaysMs: [1, 1] });
    await assert.rejects(c.submit({ command: 'true' }), (e: unknown) => e instanceof ApiError && e.status === 503);
    await assert.rejects(c.submit({ command: 'true' }, { idempotencyKey: 'k' }), (e: unknown) => e instanceof ApiError && e.status === 409);
    assert.equal(api!.requests.length, 2);
    await assert.rejects(c.submit({ command: 'true' }, { idempotencyKey: 'has space' }), /idempotencyKey: must be 1\.\.255 visible ASCII/);
  });

  it('an idempotent submit is retried when the server is unreachable, until the bound', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    let calls = 0;
    const counting: typeof fetch = (input, init) => {
      calls++;
      return fetch(input, init);
    };
    const c = new DroverClient({ url, token: 't', fetch: counting, submitRetryDelaysMs: [1, 1] });
    await assert.rejects(c.submit({ command: 'true' }, { idempotencyKey: 'k' }), (e: unknown) => e instanceof ConnectionError);
    assert.equal(calls, 3);
  });

  it('allTasks follows nextCursor', async () => {
    await serve((req, res) => {
      const cursor = req.query.get('cursor');
      if (!cursor) return sendJson(res, 200, { tasks: [makeSummary({ id: 'B' })], nextCursor: 'B' });
      sendJson(res, 200, { tasks: [makeSummary({ id: 'A' })], nextCursor: null });
    });
    const c = new DroverClient({ url: api!.url, token: 't' });
    const ids: string[] = [];
    for await (const t of c.allTasks({ name: 'x' })) ids.push(t.id);
    assert.deepEqual(ids, ['B', 'A']);
    assert.equal(api!.requests[1]!.query.toString(), 'name=x&cursor=B');
  });

  it('counts, minutes and logChunks send their queries; stream() parses events and tracks the resume id', async () => {
    const summary = makeSummary();
    await serve((req, res) => {
      if (req.path === '/v1/stats/counts') return sendJson(res, 200, { counts: { ready: 0, waiting: 1, running: 0, retrying: 0, succeeded: 2, failed: 0, cancelled: 0 }, total: 3 });
      if (req.path === '/v1/stats/minutes') return sendJson(res, 200, { minutes: [] });
      if (req.path.endsWith('/log-chunks')) return sendJson(res, 200, { chunks: [{ id: 4, attempt: 1, stream: 'stdout', at: 't', data: Buffer.from('hi').toString('base64') }], atStart: true, running: false });
      if (req.path === '/v1/stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // Split mid-line, CRLF, a comment, and a keepalive id with no event.
        res.write('retry: 1000\r\n\r\nevent: hello\r\nid: 7\r\ndata: {"cursor":"7","serverTime":"t"}\r\n\r\n: ping\n\nevent: chan');
        res.end(`ges\nid: 9\ndata: ${JSON.stringify({ cursor: '9', tasks: [summary], workers: [] })}\n\n: ping\nid: 12\n\n`);
        return;
      }
      apiError(res, 404, 'not_found', req.path);
    });
    const c = new DroverClient({ url: api!.url, token: 't' });
    assert.equal((await c.counts('bob')).total, 3);
    assert.deepEqual(await c.minutes({ since: '2026-01-01T00:00:00Z' }), []);
    const page = await c.logChunks(TASK_ID, { after: 3, wait: 100, limit: 2 });
    assert.equal(Buffer.from(page.chunks[0]!.data, 'base64').toString(), 'hi');
    const s = await c.stream({ cursor: '5' });
    const events = [];
    for await (const ev of s) events.push(ev);
    assert.deepEqual(events.map((e) => [e.type, e.id]), [['hello', '7'], ['changes', '9']]);
    assert.deepEqual(events[1]!.type === 'changes' && events[1]!.tasks, [summary]);
    assert.equal(s.lastEventId, '12', 'a keepalive id moves the resume position');
    const q = api!.requests.map((r) => `${r.path}?${r.query.toString()}`);
    assert.deepEqual(q.slice(0, 3), ['/v1/stats/counts?owner=bob', '/v1/stats/minutes?since=2026-01-01T00%3A00%3A00Z', `/v1/tasks/${TASK_ID}/log-chunks?after=3&wait=100&limit=2`]);
    assert.equal(api!.requests[3]!.headers['last-event-id'], '5');
  });
});

describe('SseParser', () => {
  it('parses any chunking, CR/LF/CRLF line ends, multi-line data, comments and id-only blocks', () => {
    const text = 'event: a\rdata: 1\rdata: 2\r\r: c\n\nid: x\n\ndata:3\r\nid\r\n\r\n';
    const whole = new SseParser();
    const all = whole.push(text);
    assert.deepEqual(all, [{ event: 'a', data: '1\n2', id: null }, { event: 'message', data: '3', id: '' }]);
    for (let cut = 0; cut <= text.length; cut++) {
      const p = new SseParser();
      const got = [...p.push(text.slice(0, cut)), ...p.push(text.slice(cut))];
      assert.deepEqual(got, all, `cut at ${cut}`);
      assert.equal(p.lastEventId, '');
    }
    const q = new SseParser();
    q.push('id: 5\n\n');
    assert.equal(q.lastEventId, '5');
  });
});
