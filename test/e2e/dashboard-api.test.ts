/**
 * The dashboard's read APIs against a real server and workers on SQLite:
 * summary rows and every list filter, env redaction, counts, per-minute
 * stats, log chunks (end first, paging backwards, long-poll tail), the
 * workers listing for admins and users. Every new query parameter's bad
 * values get a 400 naming it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startCluster, type Cluster } from './harness.js';

const SUMMARY_KEYS = ['attempts', 'createdAt', 'dagRunId', 'dagStep', 'durationMs', 'endedAt', 'error', 'exitCode', 'id', 'kind', 'name', 'outcome', 'owner', 'priority', 'retriesUsed', 'runAfter', 'scheduleId', 'scheduledAt', 'signal', 'skipReason', 'startedAt', 'state', 'updatedAt', 'workerId'];

describe('e2e: dashboard read APIs (SQLite)', () => {
  let c: Cluster;
  let alice: string;
  let bob: string;
  const as = (token: string) => (method: string, path: string, body?: unknown) => c.api.req(method, path, body, token);

  before(async () => {
    c = await startCluster({ workers: 1, slots: 4 });
    alice = (await c.api.req('POST', '/v1/tokens', { name: 'alice', role: 'user' })).body.secret;
    bob = (await c.api.req('POST', '/v1/tokens', { name: 'bob', role: 'user' })).body.secret;
  });
  after(async () => c?.close());

  it('lists summary rows with the current attempt\'s worker, timing and end', async () => {
    const ok = await c.api.submit({ command: 'sh', args: ['-c', 'echo hi'], env: { SECRET: 's3cret' }, name: 'sum-ok' });
    const bad = await c.api.submit({ script: 'exit 3', name: 'sum-bad', retry: { maxRetries: 0 } });
    await c.api.waitDone(ok);
    await c.api.waitDone(bad);
    const r = await c.api.req('GET', '/v1/tasks?name=sum-');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.tasks.map((t: any) => t.name), ['sum-bad', 'sum-ok']);
    for (const t of r.body.tasks) assert.deepEqual(Object.keys(t).sort(), SUMMARY_KEYS, 'summary fields only: no command, script, args or env');
    assert.ok(!r.text.includes('s3cret') && !r.text.includes('echo hi'));
    const [b, o] = r.body.tasks;
    assert.equal(o.state, 'succeeded');
    assert.equal(o.exitCode, 0);
    assert.equal(o.workerId, 'w1');
    assert.ok(o.startedAt && o.endedAt && o.durationMs !== null && Date.parse(o.endedAt) >= Date.parse(o.startedAt));
    assert.equal(b.state, 'failed');
    assert.equal(b.exitCode, 3);
    assert.equal(b.attempts, 1);
    const waiting = await c.api.req('GET', `/v1/tasks?state=waiting&name=sum-`);
    assert.deepEqual(waiting.body.tasks, []);
  });

  it('filters by id prefix (any case), state, name, owner and time, pages by cursor; bad values name the field', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await as(alice)('POST', '/v1/tasks', { command: 'true', name: `flt-${i}` })).body.task.id);
    const bobs = (await as(bob)('POST', '/v1/tasks', { command: 'true', name: 'flt-bob' })).body.task.id;
    const prefix = ids[4]!.slice(0, 24);
    const byId = await c.api.req('GET', `/v1/tasks?id=${prefix.toLowerCase()}`);
    assert.equal(byId.status, 200, byId.text);
    assert.ok(byId.body.tasks.some((t: any) => t.id === ids[4]) && byId.body.tasks.every((t: any) => t.id.startsWith(prefix)));
    assert.deepEqual((await c.api.req('GET', `/v1/tasks?id=${ids[2]}`)).body.tasks.map((t: any) => t.id), [ids[2]]);
    // A user sees only their own, whatever the filter; an admin may ask for anyone's.
    assert.deepEqual((await as(bob)('GET', `/v1/tasks?id=${ids[2]}`)).body.tasks, []);
    assert.deepEqual((await c.api.req('GET', '/v1/tasks?owner=bob&name=flt-')).body.tasks.map((t: any) => t.id), [bobs]);
    assert.deepEqual((await as(bob)('GET', '/v1/tasks?owner=bob&name=flt-')).body.tasks.map((t: any) => t.id), [bobs]);
    const pages: string[] = [];
    let cursor: string | null = null;
    do {
      const r: any = await as(alice)('GET', `/v1/tasks?name=flt-&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      pages.push(...r.body.tasks.map((t: any) => t.id));
      cursor = r.body.nextCursor;
    } while (cursor);
    assert.deepEqual(pages, [...ids].reverse());
    const mid = (await c.api.task(ids[2]!)).task.createdAt;
    const after = await as(alice)('GET', `/v1/tasks?name=flt-&createdAfter=${mid}`);
    assert.deepEqual(after.body.tasks.map((t: any) => t.id), [ids[4], ids[3], ids[2]]);
    const beforeMid = await as(alice)('GET', `/v1/tasks?name=flt-&createdBefore=${mid}`);
    assert.deepEqual(beforeMid.body.tasks.map((t: any) => t.id), [ids[1], ids[0]]);
    const bad: Array<[string, string, string]> = [
      ['/v1/tasks?id=', 'id', ''],
      ['/v1/tasks?id=01IL', 'id', ''],
      ['/v1/tasks?id=' + '0'.repeat(27), 'id', ''],
      ['/v1/tasks?id=ab-c', 'id', ''],
      ['/v1/tasks?limit=0', 'limit', ''],
      ['/v1/tasks?limit=501', 'limit', ''],
      ['/v1/tasks?cursor=xyz', 'cursor', ''],
      ['/v1/tasks?createdAfter=yesterday', 'createdAfter', ''],
      ['/v1/tasks?state=asleep', 'state', ''],
      ['/v1/tasks?owner=alice', 'owner', 'bob'],
    ];
    for (const [path, field, who] of bad) {
      const r = await as(who === 'bob' ? bob : c.api.token)('GET', path);
      assert.equal(r.status, 400, `${path}: ${r.text}`);
      assert.equal(r.body.error.field, field, `${path}: ${r.text}`);
      assert.ok(r.body.error.reason);
    }
  });

  it('order=ended lists failed (or cancelled) tasks by when they ended, paged by its cursor; only the owner\'s; bad values name the field', async () => {
    // carol's own tasks (alice's must stay free of failures for the per-minute case below).
    const carol = (await c.api.req('POST', '/v1/tokens', { name: 'carol', role: 'user' })).body.secret;
    // The first-created fails last: it sleeps, the two after it fail at once.
    const slow = (await as(carol)('POST', '/v1/tasks', { script: 'sleep 0.3; exit 4', name: 'end-slow', retry: { maxRetries: 0 } })).body.task.id;
    const quick = [];
    for (let i = 0; i < 2; i++) quick.push((await as(carol)('POST', '/v1/tasks', { script: 'exit 5', name: `end-quick-${i}`, retry: { maxRetries: 0 } })).body.task.id);
    const bobs = (await as(bob)('POST', '/v1/tasks', { script: 'exit 6', name: 'end-bob', retry: { maxRetries: 0 } })).body.task.id;
    for (const id of [slow, ...quick, bobs]) await c.api.waitDone(id);
    const byEnd = async (token: string, extra = '') => {
      const out: any[] = [];
      let cursor: string | null = null;
      do {
        const r: any = await as(token)('GET', `/v1/tasks?state=failed&order=ended&name=end-&limit=1${extra}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        assert.equal(r.status, 200, r.text);
        out.push(...r.body.tasks);
        cursor = r.body.nextCursor;
        if (cursor) assert.match(cursor, /^\d+\.[0-9A-Z]{26}$/);
      } while (cursor);
      return out;
    };
    const mine = await byEnd(carol);
    assert.equal(mine[0].id, slow, 'the task that ended last comes first, though it was created first');
    assert.deepEqual(new Set(mine.map((t) => t.id)), new Set([slow, ...quick]), 'carol sees her own only');
    const ends = mine.map((t) => Date.parse(t.updatedAt));
    assert.deepEqual(ends, [...ends].sort((a, b) => b - a));
    assert.deepEqual((await byEnd(c.api.token)).map((t) => t.id).sort(), [slow, ...quick, bobs].sort(), 'an admin sees every owner\'s');
    // The default order is unchanged: newest created first.
    const created = await as(carol)('GET', '/v1/tasks?state=failed&name=end-');
    assert.deepEqual(created.body.tasks.map((t: any) => t.id), [...quick].reverse().concat(slow));
    const bad: Array<[string, string]> = [
      ['/v1/tasks?order=ended', 'order'],
      ['/v1/tasks?order=ended&state=succeeded', 'order'],
      ['/v1/tasks?order=newest&state=failed', 'order'],
      ['/v1/tasks?order=&state=failed', 'order'],
      [`/v1/tasks?order=ended&state=failed&cursor=${slow}`, 'cursor'],
      [`/v1/tasks?state=failed&cursor=1700000000000.${slow}`, 'cursor'],
      [`/v1/tasks?order=ended&state=failed&cursor=x.${slow}`, 'cursor'],
      [`/v1/tasks?order=ended&state=failed&cursor=99999999999999999.${slow}`, 'cursor'],
    ];
    for (const [path, field] of bad) {
      const r = await as(carol)('GET', path);
      assert.equal(r.status, 400, `${path}: ${r.text}`);
      assert.equal(r.body.error.field, field, `${path}: ${r.text}`);
      assert.ok(r.body.error.reason);
    }
  });

  it('env values go only to the task\'s owner', async () => {
    const id = (await as(alice)('POST', '/v1/tasks', { command: 'sleep', args: ['30'], env: { TOKEN: 'hunter2', MODE: 'x' } })).body.task.id;
    const own = await as(alice)('GET', `/v1/tasks/${id}`);
    assert.deepEqual(own.body.task.env, { TOKEN: 'hunter2', MODE: 'x' });
    assert.equal(own.body.task.envRedacted, false);
    const admin = await c.api.req('GET', `/v1/tasks/${id}`);
    assert.deepEqual(admin.body.task.env, { TOKEN: '', MODE: '' });
    assert.equal(admin.body.task.envRedacted, true);
    const cancelled = await c.api.req('POST', `/v1/tasks/${id}/cancel`);
    assert.equal(cancelled.body.task.envRedacted, true);
    assert.ok(!cancelled.text.includes('hunter2'));
    await c.api.waitState(id, ['cancelled']);
    const retried = await c.api.req('POST', `/v1/tasks/${id}/retry`);
    assert.ok(!retried.text.includes('hunter2'));
    await c.api.req('POST', `/v1/tasks/${id}/cancel`);
    const mine = await c.api.req('POST', '/v1/tasks', { command: 'true', env: { A: 'b' } });
    assert.deepEqual([mine.body.task.env, mine.body.task.envRedacted], [{ A: 'b' }, false]);
  });

  it('counts by state, per user or (admins) anyone; bad owner is named', async () => {
    const before = (await as(bob)('GET', '/v1/stats/counts')).body;
    const id = (await as(bob)('POST', '/v1/tasks', { command: 'false', retry: { maxRetries: 0 } })).body.task.id;
    await c.api.waitDone(id);
    const mine = await as(bob)('GET', '/v1/stats/counts');
    assert.equal(mine.status, 200);
    assert.deepEqual(Object.keys(mine.body.counts).sort(), ['cancelled', 'failed', 'ready', 'retrying', 'running', 'skipped', 'succeeded', 'waiting']);
    assert.equal(mine.body.counts.failed, before.counts.failed + 1);
    assert.equal(mine.body.total, before.total + 1);
    assert.equal(mine.body.total, Object.values(mine.body.counts as Record<string, number>).reduce((a, b) => a + b, 0));
    const asAdmin = await c.api.req('GET', '/v1/stats/counts?owner=bob');
    assert.deepEqual(asAdmin.body, mine.body);
    const all = await c.api.req('GET', '/v1/stats/counts');
    assert.ok(all.body.total > mine.body.total);
    const listed = await c.api.req('GET', '/v1/tasks?limit=500');
    assert.equal(all.body.total, listed.body.tasks.length, 'counts agree with the rows');
    for (const [path, field, token] of [['/v1/stats/counts?owner=alice', 'owner', bob], ['/v1/stats/counts?owner=', 'owner', c.api.token], ['/v1/stats/counts?x=1', 'x', c.api.token]] as const) {
      const r = await as(token)('GET', path);
      assert.equal(r.status, 400, path);
      assert.equal(r.body.error.field, field, r.text);
    }
  });

  it('per-minute activity: attempts started, ends by outcome, submit-to-start latency; window rules', async () => {
    const since = new Date(Date.now() - 60_000).toISOString();
    const r = await as(alice)('GET', `/v1/stats/minutes?since=${since}`);
    assert.equal(r.status, 200, r.text);
    const sum = (k: string) => r.body.minutes.reduce((n: number, m: any) => n + m[k], 0);
    assert.ok(sum('started') >= 5 && sum('succeeded') >= 5, JSON.stringify(r.body));
    for (const m of r.body.minutes) {
      assert.equal(new Date(m.minute).getUTCSeconds(), 0);
      if (m.latencyCount > 0) assert.ok(m.latencyAvgMs >= 0 && m.latencyMaxMs >= m.latencyAvgMs);
      else assert.deepEqual([m.latencyAvgMs, m.latencyMaxMs], [null, null]);
    }
    // Owner-scoped: bob's failures are not alice's.
    const bobs = (await as(bob)('GET', `/v1/stats/minutes?since=${since}`)).body.minutes;
    assert.ok(bobs.reduce((n: number, m: any) => n + m.failed, 0) >= 1);
    assert.equal(sum('failed'), 0);
    assert.equal((await c.api.req('GET', '/v1/stats/minutes')).status, 200, 'default: the last hour');
    const now = Date.now();
    const iso = (t: number) => new Date(t).toISOString();
    const bad: Array<[string, string]> = [
      [`since=${iso(now)}&until=${iso(now - 60_000)}`, 'since'],
      [`since=${iso(now - 25 * 3600_000)}&until=${iso(now)}`, 'since'],
      ['since=soon', 'since'],
      ['until=2026-13-01T00:00:00Z', 'until'],
      ['bucket=5', 'bucket'],
    ];
    for (const [q, field] of bad) {
      const b = await c.api.req('GET', `/v1/stats/minutes?${q}`);
      assert.equal(b.status, 400, `${q}: ${b.text}`);
      assert.equal(b.body.error.field, field, `${q}: ${b.text}`);
    }
    assert.equal((await as(bob)('GET', '/v1/stats/minutes?owner=alice')).body.error.field, 'owner');
  });

  it('log chunks: the end first, pages backwards to the start, the same bytes as the log', async () => {
    // ~3 MB in lines: many 64 KiB chunks.
    const id = await c.api.submit({ script: 'i=0; while [ $i -lt 40000 ]; do echo "line $i ................................................................"; i=$((i+1)); done', name: 'big-log' });
    const done = await c.api.waitDone(id);
    assert.equal(done.task.state, 'succeeded');
    const end = await c.api.req('GET', `/v1/tasks/${id}/log-chunks`);
    assert.equal(end.status, 200, end.text);
    assert.equal(end.body.chunks.length, 32);
    assert.equal(end.body.atStart, false);
    assert.equal(end.body.running, false);
    const pages: any[][] = [end.body.chunks];
    let first = end.body.chunks[0].id;
    let atStart = false;
    while (!atStart) {
      const p = await c.api.req('GET', `/v1/tasks/${id}/log-chunks?before=${first}&limit=20`);
      assert.equal(p.status, 200);
      assert.ok(p.body.chunks.length <= 20);
      pages.unshift(p.body.chunks);
      atStart = p.body.atStart;
      if (p.body.chunks.length) first = p.body.chunks[0].id;
    }
    const chunks = pages.flat();
    assert.ok(chunks.length > 40, `${chunks.length} chunks`);
    assert.deepEqual(chunks.map((ch) => ch.id), [...chunks.map((ch) => ch.id)].sort((a, b) => a - b), 'ascending, no overlap');
    assert.equal(new Set(chunks.map((ch) => ch.id)).size, chunks.length);
    assert.equal(Buffer.concat(chunks.map((ch) => Buffer.from(ch.data, 'base64'))).toString(), done.logs);
    assert.ok(chunks.every((ch) => ch.attempt === 1 && ch.stream === 'stdout' && !Number.isNaN(Date.parse(ch.at))));
    // Forwards from the start agrees too.
    const fwd = await c.api.req('GET', `/v1/tasks/${id}/log-chunks?after=0&limit=3`);
    assert.deepEqual(fwd.body.chunks.map((ch: any) => ch.id), chunks.slice(0, 3).map((ch) => ch.id));
    assert.equal(fwd.body.atStart, true);
    const mid = await c.api.req('GET', `/v1/tasks/${id}/log-chunks?after=${chunks[5].id}&limit=2`);
    assert.deepEqual([mid.body.chunks.map((ch: any) => ch.id), mid.body.atStart], [[chunks[6].id, chunks[7].id], false]);
    const tail = await c.api.req('GET', `/v1/tasks/${id}/log-chunks?after=${chunks[chunks.length - 1].id}&wait=5000`);
    assert.deepEqual([tail.body.chunks, tail.body.running], [[], false], 'an ended task answers a long-poll at once');
  });

  it('log chunks: a long-poll answers when output arrives and when the task ends, not at the timeout', async () => {
    const id = await c.api.submit({ script: 'sleep 0.4; echo first; sleep 0.4; echo second; sleep 0.3' });
    const t0 = performance.now();
    const a = await c.api.req('GET', `/v1/tasks/${id}/log-chunks?after=0&wait=20000`);
    assert.equal(a.status, 200);
    assert.equal(Buffer.from(a.body.chunks[0].data, 'base64').toString(), 'first\n');
    assert.equal(a.body.running, true);
    const b = await c.api.req('GET', `/v1/tasks/${id}/log-chunks?after=${a.body.chunks[a.body.chunks.length - 1].id}&wait=20000`);
    assert.equal(Buffer.from(b.body.chunks[0].data, 'base64').toString(), 'second\n');
    const last = b.body.chunks[b.body.chunks.length - 1].id;
    const e = await c.api.req('GET', `/v1/tasks/${id}/log-chunks?after=${last}&wait=20000`);
    assert.deepEqual([e.body.chunks, e.body.running], [[], false]);
    assert.ok(performance.now() - t0 < 5000, 'woken by the task, not by the 20 s wait');
    const empty = await c.api.req('GET', `/v1/tasks/${id}/log-chunks?wait=0&after=${last}`);
    assert.equal(empty.status, 200);
    // Bad input, each named; another user's task is not found.
    const bad: Array<[string, string]> = [
      ['before=1&after=1', 'before'],
      ['wait=100', 'wait'],
      ['before=5&wait=100', 'wait'],
      ['limit=33', 'limit'],
      ['limit=0', 'limit'],
      ['after=-1', 'after'],
      ['before=0', 'before'],
      ['after=1&wait=25001', 'wait'],
      ['after=x', 'after'],
      ['tail=1', 'tail'],
    ];
    for (const [q, field] of bad) {
      const r = await c.api.req('GET', `/v1/tasks/${id}/log-chunks?${q}`);
      assert.equal(r.status, 400, `${q}: ${r.text}`);
      assert.equal(r.body.error.field, field, `${q}: ${r.text}`);
    }
    assert.equal((await as(bob)('GET', `/v1/tasks/${id}/log-chunks`)).status, 404);
  });

  it('log chunks: revoking the token ends a long-poll at once with 401', async () => {
    const t = (await c.api.req('POST', '/v1/tokens', { name: 'dave', role: 'user' })).body;
    const id = (await c.api.req('POST', '/v1/tasks', { command: 'sleep', args: ['30'] }, t.secret)).body.task.id;
    await c.api.waitState(id, ['running']);
    const t0 = performance.now();
    const poll = c.api.req('GET', `/v1/tasks/${id}/log-chunks?after=0&wait=20000`, undefined, t.secret);
    await new Promise((r) => setTimeout(r, 200)); // let the poll start waiting (it answers either way)
    await c.api.req('DELETE', `/v1/tokens/${t.token.id}`);
    const r = await poll;
    assert.equal(r.status, 401, r.text);
    assert.ok(performance.now() - t0 < 5000);
    await c.api.req('POST', `/v1/tasks/${id}/cancel`);
  });
});

describe('e2e: the workers listing (SQLite)', () => {
  let c: Cluster;
  let alice: string;
  before(async () => {
    c = await startCluster({ workers: 0, serverArgs: ['--lease', '2s', '--heartbeat', '400ms'] });
    await c.startWorker({ id: 'w1', slots: 3 });
    alice = (await c.api.req('POST', '/v1/tokens', { name: 'alice', role: 'user' })).body.secret;
  });
  after(async () => c?.close());

  it('shows slots used, running attempts (a user: only theirs), draining and lost', async () => {
    const mine = (await c.api.req('POST', '/v1/tasks', { command: 'sleep', args: ['30'], name: 'alice-job' }, alice)).body.task.id;
    const admins = await c.api.submit({ command: 'sleep', args: ['30'], name: 'admin-job' });
    await c.api.waitState(mine, ['running']);
    await c.api.waitState(admins, ['running']);
    const asAdmin = (await c.api.req('GET', '/v1/workers')).body.workers;
    const asAlice = await c.api.req('GET', '/v1/workers', undefined, alice);
    assert.equal(asAlice.status, 200);
    const wa = asAdmin.find((w: any) => w.id === 'w1');
    const wu = asAlice.body.workers.find((w: any) => w.id === 'w1');
    assert.deepEqual(Object.keys(wa).sort(), ['connectedAt', 'drainingAt', 'hostname', 'id', 'labels', 'lastSeenAt', 'runningAttempts', 'slots', 'slotsUsed', 'state']);
    assert.deepEqual([wa.state, wa.slots, wa.slotsUsed, wa.drainingAt], ['connected', 3, 2, null]);
    assert.deepEqual(wa.runningAttempts.map((a: any) => a.taskName).sort(), ['admin-job', 'alice-job']);
    assert.equal(wu.slotsUsed, 2, 'slotsUsed counts everyone\'s');
    assert.deepEqual(wu.runningAttempts.map((a: any) => [a.taskId, a.taskName]), [[mine, 'alice-job']]);
    assert.ok(wu.runningAttempts.every((a: any) => Number.isInteger(a.attemptId) && !Number.isNaN(Date.parse(a.startedAt))));
    assert.equal((await c.api.req('POST', '/v1/workers/w1/drain', undefined, alice)).status, 403, 'drain is for admins');

    // Silent past the lease (the agent is stopped, its socket still open): lost.
    const w1 = c.workers[0]!;
    w1.child.kill('SIGSTOP');
    try {
      const deadline = Date.now() + 10_000;
      let state = '';
      while (Date.now() < deadline && state !== 'lost') {
        state = (await c.api.req('GET', '/v1/workers')).body.workers.find((w: any) => w.id === 'w1').state;
        if (state !== 'lost') await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(state, 'lost');
    } finally {
      w1.child.kill('SIGCONT');
    }
    await c.startWorker({ id: 'w2', slots: 1 });
    const drained = await c.api.req('POST', '/v1/workers/w2/drain');
    assert.equal(drained.status, 200);
    const w2 = (await c.api.req('GET', '/v1/workers')).body.workers.find((w: any) => w.id === 'w2');
    assert.equal(w2.state, 'draining');
    assert.ok(Date.parse(w2.drainingAt) <= Date.now());
    for (const id of [mine, admins]) await c.api.req('POST', `/v1/tasks/${id}/cancel`);
  });
});
