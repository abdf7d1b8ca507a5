/** Real server + real worker processes: success with logs, details, listing, the API's bad-input answers. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type Cluster } from './harness.js';

describe('e2e: submit, run, see the result', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ workers: 1, slots: 2 });
  });
  after(async () => c?.close());

  it('runs a command without a shell and keeps its output, attempts and events', async () => {
    const id = await c.api.submit({ command: 'sh', args: ['-c', 'echo "task=$DROVER_TASK_ID attempt=$DROVER_ATTEMPT"; echo oops >&2; echo "$GREETING"'], env: { GREETING: 'hi there' }, name: 'hello' });
    const done = await c.api.waitDone(id);
    assert.equal(done.task.state, 'succeeded');
    // stdout and stderr are two pipes: order within each is kept, order across them is as read.
    assert.equal(done.logs.replace('oops\n', ''), `task=${id} attempt=1\nhi there\n`);
    assert.ok(done.logs.includes('oops\n'));
    assert.deepEqual(done.task.result, { outcome: 'succeeded', attempt: 1, exitCode: 0, signal: null, error: null, durationMs: done.task.result.durationMs });
    assert.equal(done.attempts.length, 1);
    assert.equal(done.attempts[0].state, 'succeeded');
    assert.equal(done.attempts[0].workerId, 'w1');
    assert.deepEqual(
      done.events.map((e: any) => [e.from, e.to, e.reason]),
      [
        [null, 'ready', 'submitted'],
        ['ready', 'waiting', 'released'],
        ['waiting', 'running', 'claimed'],
        ['running', 'succeeded', 'attempt_succeeded'],
      ],
    );
  });

  it('runs an inline script with its interpreter', async () => {
    const id = await c.api.submit({ script: 'import os\nprint("py", os.environ["DROVER_ATTEMPT"])\n', interpreter: ['python3', '-u'] });
    const done = await c.api.waitDone(id);
    assert.equal(done.task.state, 'succeeded', done.logs);
    assert.equal(done.logs, 'py 1\n');
  });

  it('a missing executable fails the task at once (start_failed) naming the PATH searched', async () => {
    const id = await c.api.submit({ command: 'definitely-not-a-command-xyz', retry: { maxRetries: 0 } });
    const done = await c.api.waitDone(id);
    assert.equal(done.task.state, 'failed');
    assert.equal(done.task.result.outcome, 'start_failed');
    assert.match(done.task.result.error, /^cannot start definitely-not-a-command-xyz: not found in PATH=\//);
  });

  it('lists tasks newest first with filters and a cursor', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await c.api.submit({ command: 'true', name: `page-${i}` }));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const r: any = await c.api.req('GET', `/v1/tasks?name=page-&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(r.status, 200);
      assert.ok(r.body.tasks.length <= 2);
      seen.push(...r.body.tasks.map((t: any) => t.id));
      cursor = r.body.nextCursor;
    } while (cursor);
    assert.deepEqual(seen, [...ids].reverse());
    const future = new Date(Date.now() + 3600_000).toISOString();
    const none = await c.api.req('GET', `/v1/tasks?createdAfter=${future}`);
    assert.deepEqual(none.body.tasks, []);
  });

  it('answers bad input with 400 naming the field, and stores nothing', async () => {
    const before = (await c.api.req('GET', '/v1/tasks?limit=500')).body.tasks.length;
    const cases: Array<[unknown, string]> = [
      [{}, 'command'],
      [{ command: 'true', retry: { maxRetries: -1 } }, 'retry.maxRetries'],
      [{ command: 'true', retry: { maxRetries: 1000 } }, 'retry.maxRetries'],
      [{ command: 'true', timeout: '5 parsecs' }, 'timeout'],
      [{ command: 'true', bogus: 1 }, 'bogus'],
      [{ command: 'true', env: { A: 1 } }, 'env.A'],
      [{ command: 'true', script: 'echo' }, 'script'],
      [{ command: 'echo', args: ['ok', 'a\u0000b'] }, 'args.1'],
      [{ command: 'true', env: { A: 'x\u0000' } }, 'env.A'],
      ['{not json', 'body'],
    ];
    for (const [body, field] of cases) {
      const r = await c.api.req('POST', '/v1/tasks', body);
      assert.equal(r.status, 400, `${JSON.stringify(body)} -> ${r.text}`);
      assert.equal(r.body.error.code, 'invalid_input');
      assert.equal(r.body.error.field, field, r.text);
      assert.ok(r.body.error.reason, r.text);
    }
    const big = await c.api.req('POST', '/v1/tasks', { command: 'true', args: ['x'.repeat(60_000)], env: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`K${i}`, 'y'.repeat(60_000)])) });
    assert.equal(big.status, 413);
    assert.equal(big.body.error.field, 'body');
    const badId = await c.api.req('GET', '/v1/tasks/not-an-id');
    assert.equal(badId.status, 400);
    assert.equal(badId.body.error.field, 'id');
    const badState = await c.api.req('GET', '/v1/tasks?state=sleeping');
    assert.equal(badState.status, 400);
    assert.equal(badState.body.error.field, 'state');
    const after = (await c.api.req('GET', '/v1/tasks?limit=500')).body.tasks.length;
    assert.equal(after, before);
  });

  it('answers 404 for an unknown id and 401 without a valid token', async () => {
    const r = await c.api.req('GET', '/v1/tasks/01ARZ3NDEKTSV4RRFFQ69G5FAV');
    assert.equal(r.status, 404);
    assert.equal(r.body.error.code, 'not_found');
    assert.equal((await c.api.req('GET', '/v1/tasks', undefined, null)).status, 401);
    assert.equal((await c.api.req('GET', '/v1/tasks', undefined, 'drv_wrong')).status, 401);
    assert.equal((await c.api.req('POST', '/v1/tasks', { command: 'true' }, null)).status, 401);
    assert.equal((await c.api.req('GET', '/healthz', undefined, null)).status, 200);
  });

  it('scopes tasks to the token\'s user and limits the worker role', async () => {
    const alice = (await c.api.req('POST', '/v1/tokens', { name: 'alice' })).body.secret;
    const bob = (await c.api.req('POST', '/v1/tokens', { name: 'bob', role: 'user' })).body.secret;
    const id = (await c.api.req('POST', '/v1/tasks', { command: 'true' }, alice)).body.task.id;
    assert.equal((await c.api.req('GET', `/v1/tasks/${id}`, undefined, alice)).body.task.owner, 'alice');
    assert.equal((await c.api.req('GET', `/v1/tasks/${id}`, undefined, bob)).status, 404);
    assert.equal((await c.api.req('POST', `/v1/tasks/${id}/cancel`, undefined, bob)).status, 404);
    assert.deepEqual((await c.api.req('GET', '/v1/tasks', undefined, bob)).body.tasks, []);
    assert.equal((await c.api.req('GET', '/v1/tokens', undefined, bob)).status, 403);
    assert.equal((await c.api.req('GET', '/v1/tasks', undefined, c.workerToken)).status, 403);
    const list = (await c.api.req('GET', '/v1/tokens')).body.tokens;
    const aliceRec = list.find((t: any) => t.name === 'alice');
    assert.equal((await c.api.req('DELETE', `/v1/tokens/${aliceRec.id}`)).status, 200);
    assert.equal((await c.api.req('GET', '/v1/tasks', undefined, alice)).status, 401);
    assert.ok(!JSON.stringify(list).includes(alice), 'secrets are never listed');
  });

  it('a submit to a free worker with nothing waiting is claimed in its own write: the 201 already says running; with every slot busy it says waiting, and runs once a slot frees', async () => {
    // Earlier cases' tasks first end (the worker has 2 slots).
    for (;;) {
      const busy = (await c.api.req('GET', '/v1/tasks?state=running')).body.tasks.length + (await c.api.req('GET', '/v1/tasks?state=waiting')).body.tasks.length;
      if (busy === 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const first = await c.api.req('POST', '/v1/tasks', { command: 'sleep', args: ['1'], name: 'claimed-at-submit' });
    assert.equal(first.status, 201);
    assert.equal(first.body.task.state, 'running');
    assert.equal(first.body.task.attempts, 1);
    const second = await c.api.req('POST', '/v1/tasks', { command: 'sleep', args: ['1'] });
    assert.equal(second.body.task.state, 'running');
    const third = await c.api.req('POST', '/v1/tasks', { command: 'true' });
    assert.equal(third.status, 201);
    assert.equal(third.body.task.state, 'waiting', 'no free slot: stored waiting, dispatched later');
    const done = await c.api.waitDone(third.body.task.id);
    assert.equal(done.task.state, 'succeeded');
    const events = (await c.api.task(first.body.task.id)).events;
    assert.deepEqual(events.slice(0, 3).map((e: any) => [e.from, e.to, e.reason]), [
      [null, 'ready', 'submitted'],
      ['ready', 'waiting', 'released'],
      ['waiting', 'running', 'claimed'],
    ]);
    assert.equal((await c.api.waitDone(first.body.task.id)).task.state, 'succeeded');
  });

  it('serves an OpenAPI document built from the route schemas', async () => {
    const r = await c.api.req('GET', '/openapi.json');
    assert.equal(r.status, 200);
    assert.equal(r.body.openapi, '3.0.3');
    const post = r.body.paths['/v1/tasks'].post;
    assert.ok(post.requestBody.content['application/json'].schema.properties.command);
    assert.ok(r.body.paths['/v1/tasks/{id}/logs']);
  });
});
