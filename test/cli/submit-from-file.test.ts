/**
 * `drover submit --from-file`: against a real server process (the tasks
 * stored in file order, batches of 1,000, stdin, comments and blank lines,
 * --json, a rerun with the same --idempotency-key stores nothing twice, a bad
 * line named with nothing submitted, usage errors), and against a scripted
 * fake API for what a real server does not do on demand (a 503 and a dropped
 * connection retried with the batch's key; a server error for item i named by
 * its line; a later batch failing after earlier ones were stored).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { MAX_BATCH_SUBMIT } from '../../src/client/client.js';
import { MAX_BATCH } from '../../src/store/batch.js';
import { startCluster, type Cluster } from '../e2e/harness.js';
import { apiError, makeTask, runCli, sendJson, startFakeApi, type FakeApi, type Handler } from './fake-api.js';

const jsonl = (objs: unknown[]) => objs.map((o) => JSON.stringify(o)).join('\n') + '\n';

describe('drover submit --from-file, real server', () => {
  let c: Cluster;
  let dir: string;
  const env = () => ({ DROVER_URL: c.url, DROVER_TOKEN: c.api.token });
  const file = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const total = async () => (await c.api.req('GET', '/v1/stats/counts')).body.total as number;

  before(async () => {
    c = await startCluster({ workers: 0 });
    dir = mkdtempSync(join(tmpdir(), 'drover-from-file-'));
  });
  after(async () => {
    await c?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the client and the server agree on the batch size', () => {
    assert.equal(MAX_BATCH_SUBMIT, MAX_BATCH);
  });

  it('submits every line in order, in batches of 1000, and prints the ids', async () => {
    const lines = Array.from({ length: 2500 }, (_, i) => ({ name: `line-${i}`, command: 'echo', args: [String(i)] }));
    const text = '# generated\n\n' + jsonl(lines.slice(0, 10)) + '   \n# more\n' + jsonl(lines.slice(10));
    const r = await runCli(['submit', '--from-file', file('many.jsonl', text)], { env: env() });
    assert.equal(r.code, 0, r.stderr);
    const ids = r.stdout.trim().split('\n');
    assert.equal(ids.length, 2500);
    const first = await c.api.task(ids[0]!);
    const last = await c.api.task(ids[2499]!);
    assert.deepEqual([first.task.name, last.task.name, last.task.args], ['line-0', 'line-2499', ['2499']]);
    assert.deepEqual([...ids].sort(), ids, 'ids are made in file order');
  });

  it('reads stdin with "-", prints JSON with --json, and a rerun with the same --idempotency-key stores nothing twice', async () => {
    const text = jsonl([{ command: 'true' }, { script: 'echo hi', interpreter: ['bash'] }]);
    const a = await runCli(['submit', '--from-file', '-', '--json', '--idempotency-key', 'nightly'], { env: env(), input: text });
    assert.equal(a.code, 0, a.stderr);
    const tasks = JSON.parse(a.stdout);
    assert.deepEqual(tasks.map((t: any) => t.name), ['true', 'script']);
    const before = await total();
    const b = await runCli(['submit', '--from-file', '-', '--idempotency-key', 'nightly'], { env: env(), input: text });
    assert.equal(b.code, 0, b.stderr);
    assert.deepEqual(b.stdout.trim().split('\n'), tasks.map((t: any) => t.id));
    assert.equal(await total(), before);
  });

  it('a bad line is named with its number and field, exit 2, and nothing is submitted', async () => {
    const before = await total();
    const good = { command: 'true' };
    const cases: Array<[string, RegExp]> = [
      [jsonl([good, good]) + '# c\n' + JSON.stringify({ command: 'x', retry: { maxRetries: 'many' } }) + '\n', /bad\.jsonl line 4: invalid retry\.maxRetries: must be integer/],
      [jsonl([good, { name: 'no command' }]), /line 2: invalid command: required/],
      [jsonl([good]) + '{"command": "x",\n', /line 2: not JSON/],
      [jsonl([good, [1, 2]]), /line 2: expected a JSON object/],
      [jsonl([good, { command: 'x', colour: 'red' }]), /line 2: invalid colour: unknown field/],
      [jsonl([{ command: 'x', timeout: 'soon' }]), /line 1: invalid timeout: "soon" is not a duration/],
      ['# only a comment\n\n', /no tasks in it/],
    ];
    for (const [text, re] of cases) {
      const r = await runCli(['submit', '--from-file', file('bad.jsonl', text)], { env: env() });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, re);
      assert.equal(r.stdout, '');
    }
    assert.equal(await total(), before);
  });

  it('usage: exclusive with a command, --script and the per-task flags; an unreadable file is named', async () => {
    const f = file('ok.jsonl', jsonl([{ command: 'true' }]));
    const cases: Array<[string[], RegExp]> = [
      [['--from-file', f, '--', 'echo', 'hi'], /--from-file and a command are exclusive/],
      [['--from-file', f, '--script', f], /--from-file and --script are exclusive/],
      [['--from-file', f, '--name', 'x'], /--from-file and --name are exclusive/],
      [['--from-file', f, '--wait'], /--from-file and --wait are exclusive/],
      [['--from-file', join(dir, 'missing.jsonl')], /invalid --from-file ".*missing\.jsonl": cannot read it \(ENOENT\)/],
      [['--from-file', f, '--idempotency-key', 'x'.repeat(250)], /at most 238 characters/],
    ];
    for (const [args, re] of cases) {
      const r = await runCli(['submit', ...args], { env: env() });
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, re);
    }
  });
});

describe('drover submit --from-file, scripted API', () => {
  let api: FakeApi | null = null;
  let dir: string;
  const serve = async (h: Handler) => (api = await startFakeApi(h));
  const env = () => ({ DROVER_URL: api!.url, DROVER_TOKEN: 'tok' });
  /** The answer a real server gives a batch: one task per item, ids by position. */
  const stored = (req: { body: any }) => ({ tasks: (req.body.tasks as unknown[]).map((_, i) => makeTask({ id: `01JF${String(i).padStart(22, '0')}` })) });

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'drover-from-file-fake-'));
  });
  afterEach(async () => {
    await api?.close();
    api = null;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a batch is retried after a 503 and a dropped connection with its own key; batches get distinct keys', async () => {
    let n = 0;
    await serve((req, res) => {
      n++;
      if (n === 1) return apiError(res, 503, 'unavailable', 'store busy');
      if (n === 2) return void res.socket?.destroy();
      sendJson(res, 201, stored(req));
    });
    const path = join(dir, 'two.jsonl');
    writeFileSync(path, jsonl(Array.from({ length: 1001 }, () => ({ command: 'true' }))));
    const r = await runCli(['submit', '--from-file', path], { env: env() });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim().split('\n').length, 1001);
    const reqs = api!.requests;
    assert.deepEqual(reqs.map((q) => [q.path, (q.body as any).tasks.length]), [['/v1/tasks/batch', 1000], ['/v1/tasks/batch', 1000], ['/v1/tasks/batch', 1000], ['/v1/tasks/batch', 1]]);
    const keys = reqs.map((q) => String(q.headers['idempotency-key']));
    assert.equal(new Set(keys.slice(0, 3)).size, 1, 'the retries carry the first batch key');
    assert.notEqual(keys[3], keys[0]);
    assert.match(keys[0]!, /^[\x21-\x7e]+\.1$/);
    assert.equal(keys[3], keys[0]!.replace(/\.1$/, '.2'));
    assert.deepEqual(new Set(reqs.map((q) => q.headers.prefer)), new Set(['return=minimal']), 'only the ids are printed: every batch (and retry) asks for the short answer');
  });

  it('a server error for item i is named by its line; the batches stored before are printed and the rerun key is given', async () => {
    let n = 0;
    await serve((req, res) => {
      n++;
      if (n === 1) return sendJson(res, 201, stored(req));
      apiError(res, 400, 'invalid_input', 'tasks[2].requires: not allowed here', { field: 'tasks[2].requires', reason: 'not allowed here' });
    });
    const path = join(dir, 'fail.jsonl');
    // 1000 tasks on lines 1..1000, then a comment, so the second batch's item 2 is on line 1004.
    writeFileSync(path, jsonl(Array.from({ length: 1000 }, () => ({ command: 'true' }))) + '# second batch\n' + jsonl(Array.from({ length: 5 }, () => ({ command: 'true' }))));
    const r = await runCli(['submit', '--from-file', path, '--idempotency-key', 'base'], { env: env() });
    assert.equal(r.code, 2);
    assert.equal(r.stdout.trim().split('\n').length, 1000, 'the stored batch was printed');
    assert.match(r.stderr, /batch 2 of 2 not submitted: .*fail\.jsonl line 1004: invalid requires: not allowed here/);
    assert.match(r.stderr, /the 1000 tasks of lines 1\.\.1000 were submitted/);
    assert.match(r.stderr, /--idempotency-key base/);
  });
});
