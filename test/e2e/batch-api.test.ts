/**
 * POST /v1/tasks/batch against a real server process on SQLite (the store's
 * all-or-nothing and idempotency rules are in the store contract, run on both
 * backends): tasks in input order; every bad input named (empty, too many,
 * one bad item in the middle: its index and field, nothing stored); roles
 * (worker tokens 403, no token 401) in every odd spelling of the path; the
 * 8 MiB body limit (413); Idempotency-Key repeat (200) and reuse with another
 * body (409); Prefer: return=minimal (ids and states only, the same tasks
 * stored; a bad Prefer a 400 that stores nothing); the OpenAPI entry.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startCluster, type Cluster } from './harness.js';

interface Answer {
  status: number;
  body: any;
  headers?: Record<string, string | string[] | undefined>;
}

/** One request with the path byte for byte (no URL normalization) and a raw payload. */
function raw(c: Cluster, method: string, path: string, token: string | null, payload?: string, headers: Record<string, string> = {}): Promise<Answer> {
  const u = new URL(c.url);
  const h: Record<string, string> = { ...headers };
  if (token) h.authorization = `Bearer ${token}`;
  if (payload !== undefined) {
    h['content-type'] = 'application/json';
    h['content-length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve, reject) => {
    const req = request({ hostname: u.hostname, port: u.port, method, path, headers: h, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let body: any = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * A batch request that declares `bytes` of body and sends none: the server
 * answers from the Content-Length alone (sending the body too would race its
 * answer with our writes to a socket it closes).
 */
function oversize(c: Cluster, bytes: number): Promise<Answer> {
  const u = new URL(c.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { hostname: u.hostname, port: u.port, method: 'POST', path: '/v1/tasks/batch', agent: false, headers: { authorization: `Bearer ${c.api.token}`, 'content-type': 'application/json', 'content-length': String(bytes) } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString('utf8')) });
        });
      },
    );
    req.on('error', reject);
    req.flushHeaders();
  });
}

const batch = (c: Cluster, body: unknown, headers: Record<string, string> = {}, token: string | null = c.api.token) =>
  raw(c, 'POST', '/v1/tasks/batch', token, JSON.stringify(body), headers);

const tasks = (n: number, prefix = 'b') => Array.from({ length: n }, (_, i) => ({ name: `${prefix}-${i}`, command: 'echo', args: [String(i)] }));

describe('e2e: POST /v1/tasks/batch', () => {
  let c: Cluster;
  let userToken: string;
  /** How many tasks the server holds (admin view), to show a refused batch stored nothing. */
  const count = async () => {
    const r = await c.api.req('GET', '/v1/stats/counts');
    assert.equal(r.status, 200, r.text);
    return Object.values(r.body.counts ?? r.body).reduce((a: number, b) => a + (b as number), 0);
  };

  before(async () => {
    // No worker: tasks stay waiting.
    c = await startCluster({ workers: 0 });
    const t = await c.api.req('POST', '/v1/tokens', { name: 'batch-user', role: 'user', user: 'carol' });
    assert.equal(t.status, 201, t.text);
    userToken = t.body.secret;
  });
  after(async () => c?.close());

  it('201 with the tasks in input order, owned by the caller, each as GET shows it', async () => {
    const r = await batch(c, { tasks: [...tasks(3), { name: 'scripted', script: 'echo hi', env: { A: '1' }, retry: { maxRetries: 0 }, priority: 5 }] }, {}, userToken);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.deepEqual(r.body.tasks.map((t: any) => t.name), ['b-0', 'b-1', 'b-2', 'scripted']);
    assert.ok(r.body.tasks.every((t: any) => t.owner === 'carol' && t.state === 'waiting'));
    assert.deepEqual(r.body.tasks[1].args, ['1']);
    assert.deepEqual([r.body.tasks[3].interpreter, r.body.tasks[3].retry.maxRetries, r.body.tasks[3].priority], [['sh'], 0, 5]);
    for (const t of r.body.tasks) {
      const g = await c.api.req('GET', `/v1/tasks/${t.id}`);
      assert.deepEqual(g.body.task, { ...t, envRedacted: true, env: Object.fromEntries(Object.keys(t.env).map((k) => [k, ''])) });
      assert.deepEqual(g.body.events.map((e: any) => e.reason), ['submitted', 'released']);
    }
  });

  it('bad input is a 400 naming the field, and stores nothing', async () => {
    const before = await count();
    const cases: Array<[unknown, string, RegExp]> = [
      [{ tasks: [] }, 'tasks', /^must have at least 1 item$/],
      [{ tasks: tasks(1001) }, 'tasks', /^must have at most 1000 items$/],
      [{}, 'tasks', /required/],
      [{ tasks: tasks(2), extra: 1 }, 'extra', /unknown field/],
      [{ tasks: 'x' }, 'tasks', /array/],
      // A schema error in item 3, and a rule of toTaskSpec in item 5: named by index and field, as POST /v1/tasks names the field.
      [{ tasks: [...tasks(3), { command: 'echo', priority: 'high' }, ...tasks(3)] }, 'tasks[3].priority', /integer/],
      [{ tasks: [...tasks(3), { command: 'echo', args: ['ok', 5] }] }, 'tasks[3].args.1', /string/],
      [{ tasks: [...tasks(5), { name: 'nothing to run' }, ...tasks(3)] }, 'tasks[5].command', /required/],
      [{ tasks: [...tasks(5), { command: 'x', timeout: 'soon' }] }, 'tasks[5].timeout', /not a duration/],
      [{ tasks: [...tasks(2), { command: 'x', bogus: true }] }, 'tasks[2].bogus', /unknown field/],
    ];
    for (const [body, field, reason] of cases) {
      const r = await batch(c, body);
      assert.equal(r.status, 400, `${field}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.field, field, JSON.stringify(r.body));
      assert.match(r.body.error.reason, reason, JSON.stringify(r.body));
    }
    const bad = await batch(c, { tasks: tasks(2) }, { 'idempotency-key': 'has space' });
    assert.deepEqual([bad.status, bad.body.error.field], [400, 'Idempotency-Key']);
    const notJson = await raw(c, 'POST', '/v1/tasks/batch', c.api.token, '{"tasks": [');
    assert.equal(notJson.status, 400);
    assert.equal(await count(), before);
  });

  it('takes 1000 tasks in one request', async () => {
    const r = await batch(c, { tasks: tasks(1000, 'k') });
    assert.equal(r.status, 201);
    assert.equal(r.body.tasks.length, 1000);
    assert.equal(r.body.tasks[999].name, 'k-999');
    assert.equal(new Set(r.body.tasks.map((t: any) => t.id)).size, 1000);
  });

  it('a body beyond 8 MiB is 413 naming the limit, and stores nothing', async () => {
    const before = await count();
    const r = await oversize(c, 8 * 1024 * 1024 + 1);
    assert.equal(r.status, 413, JSON.stringify(r.body));
    assert.equal(r.body.error.field, 'body');
    assert.match(r.body.error.reason, /8 MiB/);
    // Larger than POST /v1/tasks takes (1 MiB), within this route's limit: accepted.
    const under = { tasks: Array.from({ length: 2 }, () => ({ command: 'x', args: Array.from({ length: 50 }, () => 'a'.repeat(65536)) })) };
    assert.ok(JSON.stringify(under).length > 1024 * 1024);
    const ok = await batch(c, under);
    assert.equal(ok.status, 201, JSON.stringify(ok.body).slice(0, 300));
    assert.equal(await count(), before + 2);
  });

  it('Idempotency-Key: a repeat answers 200 with the same tasks; the key with another body is 409; keys are per user', async () => {
    const body = { tasks: tasks(5, 'idem') };
    const first = await batch(c, body, { 'idempotency-key': 'batch-1' });
    assert.equal(first.status, 201);
    const before = await count();
    const again = await batch(c, body, { 'idempotency-key': 'batch-1' });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.deepEqual(again.body.tasks.map((t: any) => t.id), first.body.tasks.map((t: any) => t.id));
    // Key order inside the items does not matter.
    const reordered = { tasks: body.tasks.map((t) => ({ args: t.args, command: t.command, name: t.name })) };
    assert.equal((await batch(c, reordered, { 'idempotency-key': 'batch-1' })).status, 200);
    for (const other of [{ tasks: tasks(5, 'other') }, { tasks: tasks(4, 'idem') }, { tasks: tasks(6, 'idem') }]) {
      const r = await batch(c, other, { 'idempotency-key': 'batch-1' });
      assert.equal(r.status, 409, JSON.stringify(r.body));
      assert.match(r.body.error.message, /Idempotency-Key "batch-1"/);
    }
    assert.equal(await count(), before);
    // Another user's batch-1 is their own; a single submit with the same key is separate too.
    assert.equal((await batch(c, body, { 'idempotency-key': 'batch-1' }, userToken)).status, 201);
    assert.equal((await raw(c, 'POST', '/v1/tasks', c.api.token, JSON.stringify({ command: 'true' }), { 'idempotency-key': 'batch-1' })).status, 201);
    // Concurrent repeats make one batch.
    const racers = await Promise.all(Array.from({ length: 6 }, () => batch(c, { tasks: tasks(50, 'race') }, { 'idempotency-key': 'race' })));
    assert.deepEqual(racers.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 201]);
    assert.equal(new Set(racers.map((r) => r.body.tasks[0].id)).size, 1);
  });

  it('Prefer: return=minimal answers {id, state} per task, in input order, for the same tasks stored; a bad Prefer is a 400 and stores nothing', async () => {
    const before = await count();
    const body = { tasks: [...tasks(3, 'min'), { command: 'true', delay: '1h' }] };
    const r = await batch(c, body, { prefer: 'respond-async, return=minimal' }, userToken);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.headers?.['preference-applied'], 'return=minimal');
    assert.deepEqual(r.body.tasks.map((t: any) => Object.keys(t).sort()), Array.from({ length: 4 }, () => ['id', 'state']));
    assert.deepEqual(r.body.tasks.map((t: any) => t.state), ['waiting', 'waiting', 'waiting', 'ready']);
    const stored = await Promise.all(r.body.tasks.map(async (t: any) => (await c.api.req('GET', `/v1/tasks/${t.id}`, undefined, userToken)).body.task));
    assert.deepEqual(stored.map((t) => [t.name, t.owner, t.state]), [['min-0', 'carol', 'waiting'], ['min-1', 'carol', 'waiting'], ['min-2', 'carol', 'waiting'], ['true', 'carol', 'ready']]);
    assert.equal(await count(), before + 4);
    // A repeat under an Idempotency-Key answers short too, with the tasks the key made; the full form names them alike.
    const key = { 'idempotency-key': 'min-1' };
    const first = await batch(c, { tasks: tasks(2, 'min-key') }, { ...key, prefer: 'return=minimal' });
    const again = await batch(c, { tasks: tasks(2, 'min-key') }, { ...key, prefer: 'return=minimal' });
    const full = await batch(c, { tasks: tasks(2, 'min-key') }, { ...key, prefer: 'return=representation' });
    assert.deepEqual([first.status, again.status, full.status], [201, 200, 200]);
    assert.deepEqual(again.body.tasks, first.body.tasks);
    assert.deepEqual(full.body.tasks.map((t: any) => [t.id, t.state, t.name]), first.body.tasks.map((t: any, i: number) => [t.id, t.state, `min-key-${i}`]));
    assert.equal(full.headers?.['preference-applied'], 'return=representation');
    // No Prefer, or one without return: whole tasks and no Preference-Applied.
    for (const headers of [{}, { prefer: 'wait=10' }] as Array<Record<string, string>>) {
      const plain = await batch(c, { tasks: tasks(1, 'plain') }, headers);
      assert.equal(plain.status, 201);
      assert.equal(plain.body.tasks[0].name, 'plain-0');
      assert.equal(plain.headers?.['preference-applied'], undefined);
    }
    const mid = await count();
    for (const prefer of ['return=full', 'return', `wait=1, ${'x'.repeat(1100)}`]) {
      const bad = await batch(c, { tasks: tasks(2, 'bad-prefer') }, { prefer });
      assert.equal(bad.status, 400, JSON.stringify(bad.body));
      assert.equal(bad.body.error.field, 'Prefer', JSON.stringify(bad.body));
    }
    assert.equal(await count(), mid);
  });

  it('roles: worker tokens 403, no token 401, in every spelling of the path; nothing stored', async () => {
    const before = await count();
    const payload = JSON.stringify({ tasks: tasks(2, 'sneaky') });
    const matched = ['/v1/tasks/batch', '/v1/tasks/%62atch', '/v1/tasks/batch?x=1', '/v1/tasks/b%61tch'];
    const unmatched = ['/v1/tasks/batch/', '/v1//tasks/batch', '//v1/tasks/batch', '/v1/tasks//batch', '/v1/tasks/Batch', '/V1/tasks/batch', '/v1/tasks/batch;x', '/v1/tasks/./batch', '/v1/tasks/batch%2F'];
    for (const path of matched) {
      assert.equal((await raw(c, 'POST', path, c.workerToken, payload)).status, 403, `worker ${path}`);
      assert.equal((await raw(c, 'POST', path, null, payload)).status, 401, `none ${path}`);
    }
    for (const path of unmatched) {
      for (const token of [c.workerToken, null, userToken]) {
        const r = await raw(c, 'POST', path, token, payload);
        assert.ok([401, 403, 404].includes(r.status), `${path} with ${token ? 'a token' : 'none'}: ${r.status} ${JSON.stringify(r.body)}`);
      }
    }
    assert.equal(await count(), before);
  });

  it('is in the OpenAPI document with its answers', async () => {
    const doc = (await c.api.req('GET', '/openapi.json')).body;
    const op = doc.paths['/v1/tasks/batch'].post;
    assert.deepEqual(Object.keys(op.responses).sort(), ['200', '201', '400', '401', '403', '409', '413', '415', '503']);
    assert.ok(op.parameters.some((p: any) => p.in === 'header' && p.name === 'idempotency-key'));
    assert.ok(op.parameters.some((p: any) => p.in === 'header' && p.name === 'prefer' && /return=minimal/.test(p.description)));
    const schema = op.requestBody.content['application/json'].schema;
    assert.equal(schema.properties.tasks.maxItems, 1000);
  });
});
