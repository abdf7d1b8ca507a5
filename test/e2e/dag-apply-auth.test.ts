/**
 * DAG definitions against a real server (issue 12):
 *   - every validation error of the issue through `drover dag apply` (a cycle
 *     naming its steps, a missing dependency, duplicate names, an empty DAG,
 *     a step with nothing to run) exits 2 with the field as the file spells
 *     it and its line, and changes nothing (GET /v1/dags shows no new
 *     version, no new DAG);
 *   - who may do what: a user cannot see, run, cancel or retry another
 *     user's DAG or run (404, also through the CLI and the run id prefix
 *     search); an admin sees them with parameter values hidden; a worker
 *     token is refused (403) on every DAG route.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { drover } from './cli-run.js';
import { startCluster, type Cluster } from './harness.js';

const GOOD = 'name: etl\nsteps:\n  - name: extract\n    command: "true"\n  - name: load\n    depends_on: [extract]\n    command: "true"\n';

describe('e2e: dag apply refuses each invalid DAG and stores nothing', () => {
  let c: Cluster;
  let dir: string;
  before(async () => {
    c = await startCluster({ workers: 0 });
    dir = mkdtempSync(join(tmpdir(), 'drover-dag-apply-'));
  });
  after(async () => {
    await c?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const CASES: Array<{ name: string; file: string; stderr: string }> = [
    {
      name: 'a cycle, its steps named',
      file: 'name: etl\nsteps:\n  - name: extract\n    depends_on: [load]\n    command: "true"\n  - name: transform\n    depends_on: [extract]\n    command: "true"\n  - name: load\n    depends_on: [transform]\n    command: "true"\n',
      stderr: 'etl.yaml: steps[0].depends_on: cycle: extract → load → transform → extract (extract depends on load, load depends on transform, transform depends on extract) (step "extract", line 4)',
    },
    {
      name: 'a dependency on a missing step',
      file: 'name: etl\nsteps:\n  - name: extract\n    command: "true"\n  - name: load\n    depends_on:\n      - extrct\n    command: "true"\n',
      stderr: 'etl.yaml: steps[1].depends_on[0]: step "load" depends on "extrct", which is not a step of this DAG (line 7)',
    },
    {
      name: 'duplicate step names',
      file: 'name: etl\nsteps:\n  - name: extract\n    command: "true"\n  - name: extract\n    command: "false"\n',
      stderr: 'etl.yaml: steps[1].name: "extract" is already the name of steps[0]; step names must be unique (line 5)',
    },
    { name: 'an empty DAG', file: 'name: etl\nsteps: []\n', stderr: 'etl.yaml: steps: a DAG needs at least one step (line 2)' },
    {
      name: 'a step with nothing to run',
      file: 'name: etl\nsteps:\n  - name: extract\n    command: "true"\n  - name: load\n    depends_on: [extract]\n    env: {MODE: full}\n',
      stderr: 'etl.yaml: steps[1].command: required: give "command" (with optional "args") or "script" (step "load", line 5)',
    },
    {
      name: 'an unknown field (the schema\'s spelling steps.1.dependson, as the file spells it)',
      file: 'name: etl\nsteps:\n  - name: extract\n    command: "true"\n  - name: load\n    dependson: [extract]\n    command: "true"\n',
      stderr: 'etl.yaml: steps[1].dependson: unknown field (step "load", line 6)',
    },
    {
      name: 'a condition that is not one',
      file: 'name: etl\nsteps:\n  - name: extract\n    command: "true"\n  - name: load\n    depends_on: [extract]\n    when: sometimes\n    command: "true"\n',
      stderr: 'etl.yaml: steps[1].when: expected one of success, failure, always (got "sometimes") (step "load", line 7)',
    },
  ];

  it('each error names the field as the file spells it and its line; exit 2; nothing stored', { timeout: 60_000 }, async () => {
    writeFileSync(join(dir, 'etl.yaml'), GOOD);
    const first = await drover(c, ['dag', 'apply', 'etl.yaml'], { cwd: dir });
    assert.equal(first.code, 0, first.stderr);
    const before = (await c.api.req('GET', '/v1/dags/etl')).body.dag;
    assert.equal(before.version, 1);
    for (const k of CASES) {
      writeFileSync(join(dir, 'etl.yaml'), k.file);
      const r = await drover(c, ['dag', 'apply', 'etl.yaml'], { cwd: dir });
      assert.equal(r.code, 2, `${k.name}: ${r.stderr}`);
      assert.equal(r.stderr, `drover: ${k.stderr}\n`, k.name);
      assert.equal(r.stdout, '');
    }
    // A new DAG with an error is not created either (read from stdin this time).
    const fresh = await drover(c, ['dag', 'apply', '-'], { input: 'name: fresh\nsteps: []\n' });
    assert.equal(fresh.code, 2);
    assert.equal(fresh.stderr, 'drover: stdin: steps: a DAG needs at least one step (line 2)\n');
    const list = await c.api.req('GET', '/v1/dags');
    assert.deepEqual(list.body.dags.map((d: any) => [d.name, d.version]), [['etl', 1]]);
    assert.equal((await c.api.req('GET', '/v1/dags/etl')).body.dag.hash, before.hash);
    assert.equal((await c.api.req('GET', '/v1/dags/etl?version=2')).status, 404);
    assert.equal((await c.api.req('GET', '/v1/dags/fresh')).status, 404);
    // The same definition again is unchanged; a changed one is version 2.
    writeFileSync(join(dir, 'etl.yaml'), GOOD);
    assert.equal((await drover(c, ['dag', 'apply', 'etl.yaml'], { cwd: dir })).stdout, 'DAG etl unchanged (version 1)\n');
    writeFileSync(join(dir, 'etl.json'), JSON.stringify({ name: 'etl', description: 'now in JSON', steps: [{ name: 'extract', command: 'true' }] }));
    assert.equal((await drover(c, ['dag', 'apply', 'etl.json'], { cwd: dir })).stdout, 'applied DAG etl version 2 (1 step)\n');
    const v1 = await drover(c, ['dag', 'show', 'etl', '--version', '1']);
    assert.match(v1.stdout, /^version: +1 \(the newest is 2\), applied /m);
    assert.match(v1.stdout, /^load +extract +success /m);
  });
});

describe('e2e: DAGs and runs are their owner\'s', () => {
  let c: Cluster;
  let dir: string;
  let alice = '';
  let bob = '';
  let runId = '';
  before(async () => {
    c = await startCluster({ workers: 1, slots: 2 });
    dir = mkdtempSync(join(tmpdir(), 'drover-dag-auth-'));
    alice = (await c.api.req('POST', '/v1/tokens', { name: 'alice', role: 'user' })).body.secret;
    bob = (await c.api.req('POST', '/v1/tokens', { name: 'bob', role: 'user' })).body.secret;
    writeFileSync(join(dir, 'private.yaml'), 'name: private\nparams: {SECRET: none}\nsteps:\n  - name: hold\n    script: sleep 300\n  - name: then\n    depends_on: [hold]\n    command: "true"\n');
    assert.equal((await drover(c, ['dag', 'apply', 'private.yaml'], { cwd: dir, token: alice })).code, 0);
    const run = await drover(c, ['dag', 'run', 'private', '--param', 'SECRET=hunter2'], { token: alice });
    assert.equal(run.code, 0, run.stderr);
    runId = run.stdout.trim();
  });
  after(async () => {
    await c?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('another user gets 404 for the DAG and the run, through the API and the CLI, and lists neither', { timeout: 60_000 }, async () => {
    const as = (token: string) => (m: string, p: string, body?: unknown) => c.api.req(m, p, body, token);
    const b = as(bob);
    for (const [m, p, body] of [
      ['GET', '/v1/dags/private'],
      ['GET', '/v1/dags/private?version=1'],
      ['POST', '/v1/dags/private/runs', {}],
      ['GET', `/v1/dag-runs/${runId}`],
      ['POST', `/v1/dag-runs/${runId}/cancel`],
      ['POST', `/v1/dag-runs/${runId}/retry`],
      ['GET', '/v1/dag-runs?dag=private'],
    ] as Array<[string, string, unknown?]>) {
      const r = await b(m, p, body);
      assert.equal(r.status, 404, `${m} ${p}: ${r.text}`);
    }
    assert.equal((await b('GET', '/v1/dags/private?owner=alice')).status, 400, 'only admins name an owner');
    assert.deepEqual((await b('GET', '/v1/dags')).body.dags, []);
    assert.deepEqual((await b('GET', '/v1/dag-runs')).body.runs, []);
    assert.deepEqual((await b('GET', `/v1/dag-runs?id=${runId.slice(0, 10)}`)).body.runs, []);

    for (const args of [['dag', 'show', 'private'], ['dag', 'run', 'private'], ['dag', 'runs', 'private']]) {
      const r = await drover(c, args, { token: bob });
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stderr, 'drover: DAG private not found\n', args.join(' '));
    }
    for (const sub of ['status', 'cancel', 'retry']) {
      const full = await drover(c, ['dag', sub, runId], { token: bob });
      assert.equal(full.code, 1, `${sub}: ${full.stderr}`);
      assert.equal(full.stderr, `drover: DAG run ${runId} not found\n`);
      const prefix = await drover(c, ['dag', sub, runId.slice(0, 10)], { token: bob });
      assert.equal(prefix.code, 1);
      assert.equal(prefix.stderr, `drover: DAG run not found: no run id starts with ${runId.slice(0, 10)}\n`);
    }
    // Nothing bob did touched alice's run.
    const mine = await as(alice)('GET', `/v1/dag-runs/${runId}`);
    assert.equal(mine.body.run.state, 'running');
    assert.deepEqual(mine.body.run.params, { SECRET: 'hunter2' });

    // Bob's DAG of the same name is his own.
    writeFileSync(join(dir, 'bobs.yaml'), 'name: private\nsteps:\n  - name: only\n    command: "true"\n');
    assert.equal((await drover(c, ['dag', 'apply', 'bobs.yaml'], { cwd: dir, token: bob })).stdout, 'applied DAG private version 1 (1 step)\n');
    const bobRun = await drover(c, ['dag', 'run', 'private', '--wait'], { token: bob });
    assert.equal(bobRun.code, 0, bobRun.stderr);
    assert.equal((await as(alice)('GET', '/v1/dags/private')).body.dag.steps.length, 2);
  });

  it('an admin sees the run, without its parameter values; the owner cancels it', { timeout: 60_000 }, async () => {
    const seen = await c.api.req('GET', `/v1/dag-runs/${runId}`);
    assert.equal(seen.status, 200);
    assert.deepEqual(seen.body.run.params, { SECRET: '' });
    assert.equal((await c.api.req('GET', '/v1/dags/private?owner=alice')).body.dag.owner, 'alice');
    const cancel = await drover(c, ['dag', 'cancel', runId], { token: alice });
    assert.equal(cancel.code, 0, cancel.stderr);
    assert.equal(cancel.stdout, `run ${runId} cancelled\n`);
  });

  it('a run needs no body (its params default); a body that is not an object is still a 400', async () => {
    const none = await c.api.req('POST', '/v1/dags/private/runs', undefined, alice);
    assert.equal(none.status, 201, none.text);
    assert.equal((await c.api.req('POST', `/v1/dag-runs/${none.body.run.id}/cancel`, undefined, alice)).status, 200);
    const bad = await c.api.req('POST', '/v1/dags/private/runs', [1], alice);
    assert.deepEqual([bad.status, bad.body.error.field], [400, 'body']);
  });

  it('a worker token is refused on every DAG route (403)', async () => {
    for (const [m, p] of [
      ['GET', '/v1/dags'],
      ['POST', '/v1/dags'],
      ['GET', '/v1/dags/private'],
      ['POST', '/v1/dags/private/runs'],
      ['GET', '/v1/dag-runs'],
      ['GET', `/v1/dag-runs/${runId}`],
      ['POST', `/v1/dag-runs/${runId}/cancel`],
      ['POST', `/v1/dag-runs/${runId}/retry`],
    ]) {
      const r = await c.api.req(m!, p!, m === 'POST' ? {} : undefined, c.workerToken);
      assert.equal(r.status, 403, `${m} ${p}: ${r.text}`);
    }
    const cli = await drover(c, ['dag', 'ls'], { token: c.workerToken });
    assert.equal(cli.code, 1);
    assert.match(cli.stderr, /^drover: forbidden: /);
  });
});
