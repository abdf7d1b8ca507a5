/**
 * Submit against a real server process on SQLite: the Idempotency-Key header
 * (201 then 200 with the same task, 409 for another body, 400 for a bad key,
 * and `drover submit --idempotency-key`), Prefer: return=minimal ({id, state};
 * a bad Prefer a 400 that stores nothing), the `requires` placement field
 * (API and `drover submit --require` / `drover show`), attempt JSON that
 * never carries the fencing token, and CLI output of a task named with an
 * escape sequence.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { createTestDatabase, PG_SKIP_REASON, requirePostgres, type TestDatabase } from '../support/postgres.js';
import { BIN, startCluster, type Cluster } from './harness.js';

const PG = await requirePostgres();

/** POST /v1/tasks with raw headers (the harness's Api sends none of its own). */
function post(c: Cluster, body: unknown, headers: Record<string, string>, token = c.api.token): Promise<{ status: number; body: any; headers: Record<string, string | string[] | undefined> }> {
  const u = new URL(c.url);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      { hostname: u.hostname, port: u.port, method: 'POST', path: '/v1/tasks', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)), ...headers } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString('utf8')), headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

function drover(c: Cluster, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, DROVER_URL: c.url, DROVER_TOKEN: c.api.token }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe('e2e: submit', () => {
  let c: Cluster;
  before(async () => {
    // No worker: tasks stay waiting, which is all these tests need.
    c = await startCluster({ workers: 0 });
  });
  after(async () => c?.close());

  it('Idempotency-Key: 201 the first time, 200 with the same task after; key order and spacing of the body do not matter', async () => {
    const body = { name: 'idem', command: 'echo', args: ['a'], env: { B: '2', A: '1' }, retry: { maxRetries: 1, baseDelay: '1s' } };
    const first = await post(c, body, { 'idempotency-key': 'key-1' });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    const again = await post(c, body, { 'idempotency-key': 'key-1' });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.task.id, first.body.task.id);
    const reordered = { retry: { baseDelay: '1s', maxRetries: 1 }, env: { A: '1', B: '2' }, args: ['a'], command: 'echo', name: 'idem' };
    const third = await post(c, reordered, { 'idempotency-key': 'key-1' });
    assert.equal(third.status, 200);
    assert.equal(third.body.task.id, first.body.task.id);
    // One task, one creation: no second row.
    const list = await c.api.req('GET', '/v1/tasks?name=idem');
    assert.equal(list.body.tasks.length, 1);
    // Concurrent repeats of one key make one task.
    const racers = await Promise.all(Array.from({ length: 8 }, () => post(c, { command: 'true' }, { 'idempotency-key': 'race' })));
    assert.equal(new Set(racers.map((r) => r.body.task.id)).size, 1);
    assert.deepEqual(racers.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 200, 200, 201]);
    // Without a key every submit is new.
    const a = await post(c, body, {});
    const b = await post(c, body, {});
    assert.deepEqual([a.status, b.status], [201, 201]);
    assert.notEqual(a.body.task.id, b.body.task.id);
  });

  it('the same key with a different body is a 409 naming the header; keys are per user', async () => {
    assert.equal((await post(c, { command: 'true' }, { 'idempotency-key': 'key-2' })).status, 201);
    const conflict = await post(c, { command: 'false' }, { 'idempotency-key': 'key-2' });
    assert.equal(conflict.status, 409, JSON.stringify(conflict.body));
    assert.equal(conflict.body.error.code, 'conflict');
    assert.match(conflict.body.error.message, /Idempotency-Key/);
    const u = await c.api.req('POST', '/v1/tokens', { name: 'idem-other', role: 'user' });
    const theirs = await post(c, { command: 'true' }, { 'idempotency-key': 'key-2' }, u.body.secret);
    assert.equal(theirs.status, 201, 'another user\'s key space is separate');
  });

  it('a bad Idempotency-Key is a 400 naming the header and the rule', async () => {
    for (const key of ['', 'has space', 'k'.repeat(256), 'caf\u00e9', 'tab\there']) {
      const r = await post(c, { command: 'true' }, { 'idempotency-key': key });
      assert.equal(r.status, 400, `${JSON.stringify(key)}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.field, 'Idempotency-Key');
      assert.equal(r.body.error.reason, 'must be 1..255 visible ASCII characters (0x21-0x7E)');
    }
    assert.equal((await post(c, { command: 'true' }, { 'idempotency-key': '!'.repeat(255) })).status, 201);
  });

  it('Prefer: return=minimal answers {id, state} with Preference-Applied, a repeat under its key too; a bad Prefer is a 400 naming it and stores nothing', async () => {
    const counts = async () => Object.values((await c.api.req('GET', '/v1/stats/counts')).body.counts as Record<string, number>).reduce((a, b) => a + b, 0);
    const before = await counts();
    const now = await post(c, { name: 'pref-now', command: 'true' }, { prefer: 'respond-async, return=minimal' });
    const later = await post(c, { name: 'pref-later', command: 'true', delay: '1h' }, { prefer: 'RETURN="minimal"' });
    for (const r of [now, later]) {
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(r.headers['preference-applied'], 'return=minimal');
      assert.deepEqual(Object.keys(r.body), ['task']);
      assert.deepEqual(Object.keys(r.body.task).sort(), ['id', 'state']);
    }
    assert.deepEqual([now.body.task.state, later.body.task.state], ['waiting', 'ready']);
    const stored = await c.api.req('GET', `/v1/tasks/${later.body.task.id}`);
    assert.deepEqual([stored.body.task.name, stored.body.task.state], ['pref-later', 'ready']);
    assert.equal(await counts(), before + 2);

    // A repeat under an Idempotency-Key answers in the shape asked for, with the task the key made.
    const key = { 'idempotency-key': 'pref-key' };
    const first = await post(c, { name: 'pref-key', command: 'true' }, { ...key, prefer: 'return=minimal' });
    const again = await post(c, { name: 'pref-key', command: 'true' }, { ...key, prefer: 'return=minimal' });
    const full = await post(c, { name: 'pref-key', command: 'true' }, { ...key, prefer: 'return=representation' });
    assert.deepEqual([first.status, again.status, full.status], [201, 200, 200]);
    assert.deepEqual(again.body, first.body);
    assert.deepEqual([full.body.task.id, full.body.task.name, full.headers['preference-applied']], [first.body.task.id, 'pref-key', 'return=representation']);

    // No Prefer, or one without return: the whole task, no Preference-Applied.
    for (const headers of [{}, { prefer: 'wait=10' }] as Array<Record<string, string>>) {
      const plain = await post(c, { name: 'pref-plain', command: 'true' }, headers);
      assert.equal(plain.status, 201);
      assert.equal(plain.body.task.name, 'pref-plain');
      assert.equal(plain.headers['preference-applied'], undefined);
    }
    const mid = await counts();
    for (const prefer of ['return=full', 'return', `wait=1, ${'x'.repeat(1100)}`]) {
      const bad = await post(c, { name: 'pref-bad', command: 'true' }, { prefer });
      assert.equal(bad.status, 400, JSON.stringify(bad.body));
      assert.equal(bad.body.error.field, 'Prefer', JSON.stringify(bad.body));
    }
    assert.equal(await counts(), mid);
    assert.equal((await c.api.req('GET', '/v1/tasks?name=pref-bad')).body.tasks.length, 0);
  });

  it('the OpenAPI document describes the header, the 200 replay and the 409', async () => {
    const doc = (await c.api.req('GET', '/openapi.json')).body;
    const op = doc.paths['/v1/tasks'].post;
    const header = op.parameters.find((p: any) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key');
    assert.ok(header, JSON.stringify(op.parameters));
    assert.equal(header.schema.maxLength, 255);
    assert.ok(op.parameters.some((p: any) => p.in === 'header' && p.name === 'prefer' && /return=minimal/.test(p.description)), 'Prefer is documented');
    assert.ok(op.responses['200'] && op.responses['201'] && op.responses['409']);
    assert.ok(op.requestBody.content['application/json'].schema.properties.requires);
  });

  it('drover submit --idempotency-key: the same key prints the same task; another command with it fails naming the header', async () => {
    const one = await drover(c, ['submit', '--idempotency-key', 'cli-key', '--', 'echo', 'x']);
    assert.equal(one.code, 0, one.stderr);
    const two = await drover(c, ['submit', '--idempotency-key', 'cli-key', '--', 'echo', 'x']);
    assert.equal(two.code, 0, two.stderr);
    assert.equal(two.stdout, one.stdout);
    const other = await drover(c, ['submit', '--idempotency-key', 'cli-key', '--', 'echo', 'y']);
    assert.equal(other.code, 1);
    assert.match(other.stderr, /^drover: conflict: .*Idempotency-Key/);
    // Without the flag, each run is a new task.
    const x = await drover(c, ['submit', '--', 'echo', 'x']);
    const y = await drover(c, ['submit', '--', 'echo', 'x']);
    assert.notEqual(x.stdout, y.stdout);
  });

  it('requires: stored, returned, validated like labels; drover submit --require and drover show', async () => {
    const r = await post(c, { command: 'true', requires: { gpu: 'a100', zone: 'eu-1' } }, {});
    assert.equal(r.status, 201);
    assert.deepEqual(r.body.task.requires, { gpu: 'a100', zone: 'eu-1' });
    assert.deepEqual((await c.api.task(r.body.task.id)).task.requires, { gpu: 'a100', zone: 'eu-1' });
    assert.deepEqual((await post(c, { command: 'true' }, {})).body.task.requires, {});

    const nul = await post(c, { command: 'true', requires: { gpu: 'a\u0000' } }, {});
    assert.deepEqual([nul.status, nul.body.error.field], [400, 'requires.gpu']);
    const nulKey = await post(c, { command: 'true', requires: { ['g\u0000']: 'a' } }, {});
    assert.deepEqual([nulKey.status, nulKey.body.error.field], [400, 'requires']);
    const notString = await post(c, { command: 'true', requires: { gpu: 1 } }, {});
    assert.deepEqual([notString.status, notString.body.error.field], [400, 'requires.gpu']);
    const emptyKey = await post(c, { command: 'true', requires: { '': 'x' } }, {});
    assert.deepEqual([emptyKey.status, emptyKey.body.error.field], [400, 'requires']);
    const longKey = await post(c, { command: 'true', requires: { ['k'.repeat(257)]: 'x' } }, {});
    assert.deepEqual([longKey.status, longKey.body.error.field], [400, 'requires']);
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']));
    const tooMany = await post(c, { command: 'true', requires: many }, {});
    assert.deepEqual([tooMany.status, tooMany.body.error.field], [400, 'requires']);

    const sub = await drover(c, ['submit', '--require', 'gpu=h100', '--require', 'os=linux', '--', 'true']);
    assert.equal(sub.code, 0, sub.stderr);
    const show = await drover(c, ['show', sub.stdout.trim()]);
    assert.match(show.stdout, /^requires:\s+gpu=h100,os=linux$/m);
  });

  it('env names: one with "=" or an empty one is a 400 naming env, more than MAX_ENV entries too; nothing is stored', async () => {
    const count = async () => (await c.api.req('GET', '/v1/stats/counts')).text;
    const before = await count();
    for (const env of [{ 'A=B': 'x' }, { '=Z': 'q' }, { '': 'y' }, Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`V${i}`, '1']))]) {
      const r = await post(c, { command: 'env', env }, {});
      assert.deepEqual([r.status, r.body.error.field], [400, 'env'], JSON.stringify(r.body));
    }
    const eq = await post(c, { command: 'env', env: { 'A=B': 'x' } }, {});
    assert.match(eq.body.error.message, /must not contain "="/);
    assert.equal(await count(), before);
    const ok = await post(c, { command: 'env', env: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`V${i}`, '1'])) }, {});
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
  });

  it('attempt JSON never carries the fencing token', async () => {
    const r = await post(c, { command: 'sleep', args: ['60'], priority: 1000, requires: { probe: 'fencing' } }, {});
    assert.equal(r.status, 201);
    // Claimed straight through the store (as a worker's server would), so the attempt has a token.
    const store = openSqliteStore(join(c.dir, 'drover.db'));
    let token: string;
    try {
      const claim = await store.claimNext({ id: 'probe-worker', labels: { probe: 'fencing' } }, Date.now(), 60_000);
      assert.ok(claim, 'nothing claimed');
      assert.equal(claim.task.id, r.body.task.id);
      token = claim.attempt.fencingToken;
      assert.match(token, /^[0-9a-f]{32}$/);
    } finally {
      await store.close();
    }
    const detail = await c.api.req('GET', `/v1/tasks/${r.body.task.id}`);
    assert.equal(detail.status, 200);
    assert.equal(detail.body.attempts.length, 1);
    for (const a of detail.body.attempts) assert.ok(!('fencingToken' in a), JSON.stringify(a));
    assert.ok(!detail.text.includes(token), 'the token appears nowhere in the task detail');
    const list = await c.api.req('GET', '/v1/tasks');
    assert.ok(!list.text.includes(token));
    const cli = await drover(c, ['show', '--json', r.body.task.id]);
    assert.ok(!cli.stdout.includes(token));
  });

  it('a task named with an escape sequence is printed escaped by ls and show', async () => {
    const name = 'evil\x1b[2J\x1b]0;pwned\x07';
    const sub = await drover(c, ['submit', '--name', name, '--', 'true']);
    assert.equal(sub.code, 0, sub.stderr);
    const id = sub.stdout.trim();
    const ls = await drover(c, ['ls', '--wide', '--name', 'evil']);
    assert.equal(ls.code, 0, ls.stderr);
    assert.doesNotMatch(ls.stdout, /[\x00-\x08\x0b-\x1f\x7f]/);
    assert.ok(ls.stdout.includes('evil\\x1b[2J\\x1b]0;pwned\\x07'), ls.stdout);
    const show = await drover(c, ['show', id]);
    assert.doesNotMatch(show.stdout, /[\x00-\x08\x0b-\x1f\x7f]/);
    assert.match(show.stdout, /^name:\s+evil\\x1b\[2J/m);
    // JSON keeps the data as it is (escaped by JSON itself).
    assert.equal(JSON.parse((await drover(c, ['show', '--json', id])).stdout).task.name, name);
  });
});

describe('e2e: idempotent submit on PostgreSQL', { skip: PG ? false : PG_SKIP_REASON }, () => {
  let db: TestDatabase;
  let c: Cluster;
  before(async () => {
    db = await createTestDatabase();
    c = await startCluster({ workers: 0, db: db.url });
  });
  after(async () => {
    await c?.close();
    await db?.drop();
  });

  it('201 then 200 with the same task; another body 409; a bad key 400; requires round-trips', async () => {
    const body = { command: 'echo', args: ['pg'], requires: { zone: 'eu' } };
    const first = await post(c, body, { 'idempotency-key': 'pg-key' });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    assert.deepEqual(first.body.task.requires, { zone: 'eu' });
    const again = await post(c, { requires: { zone: 'eu' }, args: ['pg'], command: 'echo' }, { 'idempotency-key': 'pg-key' });
    assert.equal(again.status, 200);
    assert.equal(again.body.task.id, first.body.task.id);
    const conflict = await post(c, { command: 'echo', args: ['other'] }, { 'idempotency-key': 'pg-key' });
    assert.equal(conflict.status, 409);
    assert.match(conflict.body.error.message, /Idempotency-Key/);
    const bad = await post(c, body, { 'idempotency-key': 'with space' });
    assert.deepEqual([bad.status, bad.body.error.field], [400, 'Idempotency-Key']);
    // Concurrent repeats of one key make one task.
    const racers = await Promise.all(Array.from({ length: 8 }, () => post(c, { command: 'true' }, { 'idempotency-key': 'pg-race' })));
    assert.equal(new Set(racers.map((r) => r.body.task.id)).size, 1);
    assert.deepEqual(racers.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 200, 200, 201]);
  });
});
