/**
 * The worker protocol's trust boundary, against a real server: a worker
 * session speaks only for its own attempts, cannot take over another
 * worker's identity, is validated frame by frame, and a cancel is a stored
 * intent repeated until the attempt ends. A hand-driven FakeAgent plays the
 * hostile (or the silent) worker next to real agents.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type Cluster } from './harness.js';
import { FakeAgent } from './fake-agent.js';

const GUESSED = '0'.repeat(32);

describe('e2e: worker trust boundary', () => {
  let c: Cluster;
  let otherWorkerToken: string;
  const fakes: FakeAgent[] = [];
  const fake = async (token: string) => {
    const f = await FakeAgent.connect(c.url, token);
    fakes.push(f);
    return f;
  };

  before(async () => {
    c = await startCluster({ workers: 1, slots: 2, serverArgs: ['--heartbeat', '500ms', '--lease', '4s'] });
    const t = await c.api.req('POST', '/v1/tokens', { name: 'other-box', role: 'worker' });
    assert.equal(t.status, 201);
    otherWorkerToken = t.body.secret;
  });
  after(async () => {
    fakes.forEach((f) => f.close());
    await c?.close();
  });

  it("forged exit, log and started for another worker's attempt change nothing and are recorded", async () => {
    const id = await c.api.submit({ script: 'echo real; sleep 1.5; echo done' });
    const running = await c.api.waitState(id, ['running']);
    assert.equal(running.state, 'running');
    const attemptId: number = (await c.api.task(id)).attempts[0].id;
    for (const token of [otherWorkerToken, c.workerToken]) {
      const f = await fake(token);
      f.hello(`intruder-${fakes.length}`);
      await f.next('welcome');
      f.send({ type: 'log', attemptId, fencingToken: GUESSED, seq: 0, stream: 'stdout', data: Buffer.from('forged\n').toString('base64') });
      f.send({ type: 'started', attemptId, fencingToken: GUESSED, pid: 1 });
      f.send({ type: 'exit', attemptId, fencingToken: GUESSED, outcome: 'failed', exitCode: 77, signal: null, error: null, durationMs: 1 });
      await f.next('reject', 5_000, (m) => m.attemptId === attemptId);
      await f.next('exit_ack', 5_000).catch(() => {});
    }
    const done = await c.api.waitDone(id);
    assert.equal(done.task.state, 'succeeded');
    assert.equal(done.task.result.exitCode, 0);
    assert.equal(done.logs, 'real\ndone\n');
    const fencedEvents = done.events.filter((e: any) => e.reason === 'fenced_report');
    assert.ok(fencedEvents.length >= 2, `fenced reports recorded: ${JSON.stringify(done.events)}`);
    assert.ok(fencedEvents.every((e: any) => String(e.actor).startsWith('worker:intruder-')));
    assert.ok(done.attempts.every((a: any) => !('fencingToken' in a)), 'the API never shows fencing tokens');
  });

  it('a hello that lists another worker\'s attempt as running or killed is answered with a stop order and changes nothing', async () => {
    const id = await c.api.submit({ script: 'sleep 1; echo fine' });
    await c.api.waitState(id, ['running']);
    const attemptId: number = (await c.api.task(id)).attempts[0].id;
    const f = await fake(otherWorkerToken);
    f.hello('intruder-hello', { running: [{ attemptId, fencingToken: GUESSED }], killed: [{ attemptId, fencingToken: GUESSED, reason: 'forged' }] });
    const welcome = await f.next('welcome');
    assert.deepEqual(welcome.stop.map((s) => [s.attemptId, s.report]), [[attemptId, false]]);
    const done = await c.api.waitDone(id);
    assert.equal(done.task.state, 'succeeded');
    assert.equal(done.attempts.length, 1);
    assert.ok(!done.events.some((e: any) => String(e.detail?.kind ?? '').includes('forged')), 'a forged kill of another worker\'s attempt is not recorded as a kill');
  });

  it('a hello with the id of a connected worker is refused, with its own token or another', async () => {
    for (const token of [otherWorkerToken, c.workerToken]) {
      const f = await fake(token);
      f.hello('w1');
      const closed = await f.closed();
      assert.equal(closed.code, 4003, closed.reason);
    }
    // The real w1 still gets and finishes work.
    const done = await c.api.waitDone(await c.api.submit({ command: 'true' }));
    assert.equal(done.task.state, 'succeeded');
    assert.equal(done.attempts[0].workerId, 'w1');
  });

  it('a worker id stays bound to the token that registered it', async () => {
    const f = await fake(otherWorkerToken);
    f.hello('bound-box');
    await f.next('welcome');
    f.close();
    await new Promise((r) => setTimeout(r, 100));
    const g = await fake(c.workerToken);
    g.hello('bound-box');
    const closed = await g.closed();
    assert.equal(closed.code, 4003);
    assert.match(closed.reason, /another worker token/);
  });

  it('a malformed or oversized message closes only that session, naming the field', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ type: 'heartbeat', seq: 'x', running: [] }, /heartbeat\.seq/],
      [{ type: 'exit', attemptId: 1, fencingToken: GUESSED, outcome: 'exploded', exitCode: 0, signal: null, error: null, durationMs: 0 }, /exit\.outcome/],
      [{ type: 'log', attemptId: 1, fencingToken: GUESSED, seq: 0, stream: 'stdout', data: 'A'.repeat(200_000) }, /log\.data/],
      [{ type: 'nonsense' }, /type/],
      // The reason quotes the unknown key; cut to the close frame's 123 bytes on a character boundary
      // (cut by characters, this one was longer and ws threw, which ended the whole server).
      [{ type: 'draining', ['é'.repeat(40)]: 1 }, /^protocol error: draining: must NOT have additional properties \(é+$/],
    ];
    for (const [msg, reason] of cases) {
      const f = await fake(otherWorkerToken);
      f.hello(`bad-${fakes.length}`);
      await f.next('welcome');
      f.send(msg);
      const closed = await f.closed();
      assert.equal(closed.code, 4002);
      assert.match(closed.reason, reason);
    }
    const done = await c.api.waitDone(await c.api.submit({ command: 'true' }));
    assert.equal(done.task.state, 'succeeded');
  });

  it('an array frame carries several messages: exits in one frame end together and refill the slots; one bad item refuses the whole frame', async () => {
    const f = await fake(otherWorkerToken);
    f.hello('batcher', { slots: 2, labels: { pool: 'batch' } });
    await f.next('welcome');
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await c.api.submit({ command: 'true', requires: { pool: 'batch' } }));
    const a1 = await f.next('assign');
    const a2 = await f.next('assign');
    const exit = (a: { attempt: { attemptId: number; fencingToken: string } }, outcome = 'succeeded') => ({
      type: 'exit',
      attemptId: a.attempt.attemptId,
      fencingToken: a.attempt.fencingToken,
      outcome,
      exitCode: 0,
      signal: null,
      error: null,
      durationMs: 1,
    });
    f.send([exit(a1), exit(a2)] as never);
    await f.next('exit_ack', 5_000, (m) => m.attemptId === a1.attempt.attemptId);
    await f.next('exit_ack', 5_000, (m) => m.attemptId === a2.attempt.attemptId);
    const a3 = await f.next('assign');
    const a4 = await f.next('assign');
    assert.deepEqual(new Set([a1, a2, a3, a4].map((a) => a.attempt.taskId)), new Set(ids));
    for (const a of [a1, a2]) assert.equal((await c.api.task(a.attempt.taskId)).task.state, 'succeeded');
    f.send([exit(a3), exit(a4, 'exploded')] as never);
    const closed = await f.closed();
    assert.equal(closed.code, 4002);
    assert.match(closed.reason, /\[1\] exit\.outcome/);
    assert.equal((await c.api.task(a3.attempt.taskId)).task.state, 'running', 'nothing of a refused frame is applied');
  });

  it('an attempt reported returned that the server never asked back counts as lost, so a worker cannot bounce a task forever', async () => {
    const f = await fake(otherWorkerToken);
    f.hello('bouncer', { slots: 1, labels: { pool: 'bounce' } });
    await f.next('welcome');
    const id = await c.api.submit({ command: 'true', requires: { pool: 'bounce' } });
    for (let i = 1; i <= 6; i++) {
      const a = await f.next('assign', 5_000, (m) => m.attempt.taskId === id);
      f.send({ type: 'exit', attemptId: a.attempt.attemptId, fencingToken: a.attempt.fencingToken, outcome: 'returned', exitCode: null, signal: null, error: 'not asked', durationMs: 0 });
      await f.next('exit_ack', 5_000, (m) => m.attemptId === a.attempt.attemptId);
    }
    // The lost cap (5): the sixth loss fails the task.
    const d = await c.api.task(id);
    assert.equal(d.task.state, 'failed');
    assert.equal(d.task.lostCount, 6);
    assert.equal(d.attempts.length, 6);
    assert.match(d.attempts[0].error, /^returned without being asked back: not asked/);
    assert.equal(d.events.filter((e: any) => e.reason === 'returned').length, 0);
    assert.equal(d.events.filter((e: any) => e.reason === 'worker_lost').length, 5);
    f.close();
  });

  it('outputs in an exit are stored only as a DROVER_OUTPUT file could give them; a malformed or oversized set closes that session and stores nothing', async () => {
    // Each case is one task only these fake agents can run (label pool=outputs), one agent per task.
    const take = async (i: number) => {
      const f = await fake(otherWorkerToken);
      f.hello(`outputs-${i}`, { labels: { pool: 'outputs' } });
      await f.next('welcome');
      const a = await f.next('assign');
      const exit = { type: 'exit', attemptId: a.attempt.attemptId, fencingToken: a.attempt.fencingToken, outcome: 'succeeded', exitCode: 0, signal: null, error: null, durationMs: 1 };
      return { f, a, exit };
    };
    const cases: Array<[unknown, RegExp]> = [
      [{ '1abc': 'x' }, /^protocol error: exit\.outputs: must NOT have additional properties \(1abc\)$/],
      [{ rows: '1', ROWS: '2' }, /^protocol error: exit\.outputs: key "ROWS" given twice/],
      [{ a: 'x\u0000' }, /^protocol error: exit\.outputs: value of "a": contains a NUL character$/],
      [{ a: 'x'.repeat(40_000), b: 'y'.repeat(30_000) }, /^protocol error: exit\.outputs: 70006 bytes as KEY=VALUE lines, over the 65536-byte limit$/],
      [Object.fromEntries(Array.from({ length: 129 }, (_, i) => [`k${i}`, ''])), /^protocol error: exit\.outputs: must NOT have more than 128 properties$/],
      [{ a: 'x'.repeat(600_000) }, /^protocol error: frame of \d+ bytes is over the 524288-byte limit$/],
      // A key of multi-byte characters quoted in the reason: the close frame is cut to 123 bytes, not refused by ws.
      [{ ['é'.repeat(40)]: 'x' }, /^protocol error: exit\.outputs: must NOT have additional properties \(é+$/],
    ];
    const ids: string[] = [];
    for (let i = 0; i < cases.length + 1; i++) ids.push(await c.api.submit({ command: 'true', requires: { pool: 'outputs' } }));
    for (const [i, [outputs, reason]] of cases.entries()) {
      const { f, a, exit } = await take(i);
      f.send({ ...exit, outputs });
      const closed = await f.closed();
      assert.equal(closed.code, 4002, closed.reason);
      assert.match(closed.reason, reason);
      assert.ok(Buffer.byteLength(closed.reason) <= 123);
      const t = await c.api.task(a.attempt.taskId);
      assert.equal(t.task.outputs, null);
      assert.notEqual(t.task.state, 'succeeded');
      assert.ok(!t.events.some((e: any) => e.reason === 'attempt_succeeded'), 'nothing of a refused frame is applied');
    }
    // A failed exit carrying outputs is refused too: only a success hands them on.
    {
      const { f, exit } = await take(cases.length);
      f.send({ ...exit, outcome: 'failed', exitCode: 1, outputs: { a: '1' } });
      assert.match((await f.closed()).reason, /^protocol error: exit\.outputs: only an exit with outcome succeeded carries outputs \(got failed\)$/);
    }
    // A valid set is stored and shown as sent, __proto__ (a key like any other) included.
    const last = await c.api.submit({ command: 'true', requires: { pool: 'outputs' } });
    const { f, a, exit } = await take(cases.length + 1);
    const json = JSON.stringify({ ...exit, outputs: { rows: '42', tab: 'a\tb' } }).replace('"outputs":{', '"outputs":{"__proto__":"p",');
    f.ws.send(json);
    await f.next('exit_ack', 5_000, (m) => m.attemptId === a.attempt.attemptId);
    const r = await c.api.req('GET', `/v1/tasks/${a.attempt.taskId}`);
    assert.equal(r.body.task.state, 'succeeded');
    assert.ok(r.text.includes('"outputs":{"__proto__":"p","rows":"42","tab":"a\\tb"}'), r.text);
    assert.ok([...ids, last].includes(a.attempt.taskId));
    // The server lives on: a real worker still runs a task.
    assert.equal((await c.api.waitDone(await c.api.submit({ command: 'true' }))).task.state, 'succeeded');
  });

  it('a user or admin token cannot open a worker session', async () => {
    const u = await c.api.req('POST', '/v1/tokens', { name: 'mallory', role: 'user' });
    for (const token of [u.body.secret, c.api.token]) {
      await assert.rejects(FakeAgent.connect(c.url, token), (e: any) => e.status === 403);
    }
  });

  it("a task sees none of the agent's environment, its token above all", async () => {
    const done = await c.api.waitDone(await c.api.submit({ command: 'env', env: { MINE: 'yes' } }));
    assert.equal(done.task.state, 'succeeded');
    assert.doesNotMatch(done.logs, /DROVER_TOKEN|DROVER_EXIT_WITH_PARENT/);
    assert.ok(!done.logs.includes(c.workerToken));
    assert.match(done.logs, /^MINE=yes$/m);
    assert.match(done.logs, /^DROVER_TASK_ID=/m);
  });
});

describe('e2e: cancel is a stored intent', () => {
  let c: Cluster;
  let f: FakeAgent;
  before(async () => {
    c = await startCluster({ workers: 0, serverArgs: ['--heartbeat', '500ms', '--lease', '4s'] });
  });
  after(async () => {
    f?.close();
    await c?.close();
  });

  it('is repeated on every heartbeat answer until the attempt ends; a retry waits for the old attempt', async () => {
    f = await FakeAgent.connect(c.url, c.workerToken);
    f.hello('silent-box');
    await f.next('welcome');
    const id = await c.api.submit({ command: 'sleep', args: ['100'] });
    const { attempt } = await f.next('assign');
    f.send({ type: 'started', attemptId: attempt.attemptId, fencingToken: attempt.fencingToken, pid: 4242 });
    assert.equal((await c.api.req('POST', `/v1/tasks/${id}/cancel`)).status, 200);
    // The fast path; the agent "loses" it.
    await f.next('cancel', 5_000, (m) => m.attemptId === attempt.attemptId);
    for (let seq = 1; seq <= 2; seq++) {
      f.send({ type: 'heartbeat', seq, running: [attempt.attemptId] });
      const ack = await f.next('heartbeat_ack', 5_000, (m) => m.seq === seq);
      assert.deepEqual(ack.stop, [{ attemptId: attempt.attemptId, reason: 'task cancelled', report: true }]);
    }
    // Retry while the old attempt still runs: ready (not yet eligible), nothing new starts until it has ended.
    const r = await c.api.req('POST', `/v1/tasks/${id}/retry`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.task.state, 'ready');
    f.send({ type: 'heartbeat', seq: 3, running: [attempt.attemptId] });
    const ack = await f.next('heartbeat_ack', 5_000, (m) => m.seq === 3);
    assert.equal(ack.stop[0]?.report, true);
    await new Promise((res) => setTimeout(res, 300));
    assert.ok(!f.received.some((m) => m.type === 'assign'), 'no second attempt while the first runs');
    assert.equal((await c.api.task(id)).attempts.length, 1);
    f.send({ type: 'exit', attemptId: attempt.attemptId, fencingToken: attempt.fencingToken, outcome: 'cancelled', exitCode: null, signal: 'SIGTERM', error: null, durationMs: 5 });
    await f.next('exit_ack');
    const second = await f.next('assign');
    assert.equal(second.attempt.number, 2);
    assert.notEqual(second.attempt.fencingToken, attempt.fencingToken);
    const t = await c.api.task(id);
    assert.equal(t.task.state, 'running');
    assert.deepEqual(t.attempts.map((a: any) => a.state), ['cancelled', 'running']);
  });
});
