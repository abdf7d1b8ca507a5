/**
 * `drover dag` as a real CLI process: bad input (a DAG file that does not
 * parse, a duration without a unit, a bad --param, name, run id or flag)
 * exits 2 with one stderr line naming it and makes no request (a tripwire
 * server records any); a server's 400 is printed as the file spells the
 * field, with its line; `dag show NAME --version N` asks for that version.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli, sendJson, startFakeApi, type FakeApi } from './fake-api.js';

const GOOD = 'name: etl\nsteps:\n  - name: extract\n    command: "true"\n  - name: load\n    depends_on: [extract]\n    command: "true"\n';

describe('drover dag: bad input is refused before any request', () => {
  let tripwire: FakeApi;
  let dir: string;
  before(async () => {
    tripwire = await startFakeApi((_req, res) => sendJson(res, 500, { error: { code: 'tripwire', message: 'no request expected' } }));
    dir = mkdtempSync(join(tmpdir(), 'drover-dag-cli-'));
    const files: Record<string, string> = {
      'bare.yaml': 'name: etl\nsteps:\n  - name: extract\n    command: "true"\n    timeout: 30\n',
      'bare-retry.yaml': 'name: etl\nsteps:\n  - name: a\n    command: "true"\n  - name: b\n    command: "true"\n    retry:\n      maxDelay: "90"\n',
      'broken.yaml': 'name: etl\nsteps:\n  - name: a\n   command: "true"\n',
      'dup.yaml': 'name: etl\nsteps:\n  - name: a\n    command: "true"\n    command: "false"\n',
      'broken.json': '{"name": "etl",\n "steps": [{"name": "a",}]}',
      'list.yaml': '- name: etl\n',
      'empty.yaml': '',
    };
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  });
  after(async () => {
    await tripwire.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const CASES: Array<{ args: string[]; stderr: RegExp; input?: string }> = [
    { args: ['dag', 'apply', 'bare.yaml'], stderr: /^drover: bare\.yaml: steps\[0\]\.timeout: a bare number \(30\) is ambiguous: give a unit, 30s for seconds or 30ms for milliseconds \(step "extract", line 5\)$/ },
    { args: ['dag', 'apply', 'bare-retry.yaml'], stderr: /^drover: bare-retry\.yaml: steps\[1\]\.retry\.maxDelay: a bare number \("90"\) is ambiguous: give a unit, 90s .*\(step "b", line 8\)$/ },
    { args: ['dag', 'apply', 'broken.yaml'], stderr: /^drover: broken\.yaml:4:1: not valid YAML: / },
    { args: ['dag', 'apply', 'dup.yaml'], stderr: /^drover: dup\.yaml:5:5: a key given twice in one mapping/ },
    { args: ['dag', 'apply', 'broken.json'], stderr: /^drover: broken\.json:2:\d+: not valid JSON: Expected double-quoted property name$/ },
    { args: ['dag', 'apply', 'list.yaml'], stderr: /^drover: list\.yaml: expected a mapping with the DAG's name and steps at the top \(got a list\)$/ },
    { args: ['dag', 'apply', 'empty.yaml'], stderr: /^drover: empty\.yaml: the file is empty/ },
    { args: ['dag', 'apply', 'missing.yaml'], stderr: /^drover: invalid FILE "missing\.yaml": cannot read it \(ENOENT\)$/ },
    { args: ['dag', 'apply', '-'], input: 'name: etl\nsteps:\n  - {name: a, command: "true", timeout: 5}\n', stderr: /^drover: stdin: steps\[0\]\.timeout: a bare number \(5\)/ },
    { args: ['dag', 'apply'], stderr: /^drover: missing required argument 'file'$/ },
    { args: ['dag', 'run', 'etl', '--param', 'NOEQUALS'], stderr: /^drover: invalid --param "NOEQUALS": expected KEY=VALUE$/ },
    { args: ['dag', 'run', 'etl', '--param', '9lives=1'], stderr: /^drover: invalid --param "9lives=1": a parameter name is a letter or "_"/ },
    { args: ['dag', 'run', 'etl', '--param', 'day=1', '--param', 'DAY=2'], stderr: /^drover: invalid --param "DAY=2": "DAY" and "day" are the same parameter/ },
    { args: ['dag', 'run', 'e t l'], stderr: /^drover: invalid DAG name "e t l": expected 1\.\.100 of A-Z a-z 0-9 \. _ -, not \. or \.\. alone$/ },
    { args: ['dag', 'run', 'etl', '--owner', ''], stderr: /^drover: invalid --owner "": expected a user name$/ },
    { args: ['dag', 'show', 'etl', '--version', '0'], stderr: /^drover: invalid --version "0": expected an integer 1\.\.2147483647$/ },
    { args: ['dag', 'show', 'etl', '--version', 'newest'], stderr: /^drover: invalid --version "newest"/ },
    { args: ['dag', 'show', 'a/b'], stderr: /^drover: invalid DAG name "a\/b"/ },
    { args: ['dag', 'runs', 'etl', '--limit', '0'], stderr: /^drover: invalid --limit "0": expected an integer 1\.\.500$/ },
    { args: ['dag', 'status', '01JF'], stderr: /^drover: invalid run id "01JF": give the full id or at least 6 characters of it$/ },
    { args: ['dag', 'status', '01JF8ZUU'], stderr: /^drover: invalid run id "01JF8ZUU": expected a run id or a prefix of one \(0-9 and A-Z without I, L, O, U\)$/ },
    { args: ['dag', 'cancel', 'nope'], stderr: /^drover: invalid run id "nope": expected a run id or a prefix of one/ },
    { args: ['dag', 'retry', '12345'], stderr: /^drover: invalid run id "12345": give the full id or at least 6 characters/ },
    { args: ['dag', 'status', '01JF8Z', '--critical'], stderr: /^drover: unknown option '--critical'/ },
    { args: ['dag'], stderr: /^drover: missing subcommand: drover dag apply\|ls\|show\|run\|runs\|status\|cancel\|retry$/ },
    { args: ['dag', 'rm'], stderr: /^drover: unknown subcommand "dag rm": expected apply, ls, show, run, runs, status, cancel or retry$/ },
  ];

  for (const c of CASES) {
    it(c.args.join(' '), async () => {
      const r = await runCli(c.args, { env: { DROVER_URL: tripwire.url, DROVER_TOKEN: 'tok' }, cwd: dir, ...(c.input !== undefined ? { input: c.input } : {}) });
      assert.equal(r.code, 2, `exit status; stderr: ${r.stderr}`);
      const lines = r.stderr.split('\n').filter(Boolean);
      assert.equal(lines.length, 1, `one stderr line, got: ${JSON.stringify(r.stderr)}`);
      assert.match(lines[0]!, c.stderr);
      assert.equal(r.stdout, '');
      assert.equal(tripwire.requests.length, 0, 'no HTTP request');
    });
  }
});

describe('drover dag against a scripted API', () => {
  let api: FakeApi;
  let dir: string;
  let answer: (path: string) => { status: number; body: unknown };
  before(async () => {
    api = await startFakeApi((req, res) => {
      const a = answer(req.path);
      sendJson(res, a.status, a.body);
    });
    dir = mkdtempSync(join(tmpdir(), 'drover-dag-cli-api-'));
    writeFileSync(join(dir, 'etl.yaml'), GOOD);
  });
  after(async () => {
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const env = () => ({ DROVER_URL: api.url, DROVER_TOKEN: 'tok' });

  it('apply sends the file as the API body; a 400 is printed as the file spells the field, exit 2', async () => {
    answer = () => ({ status: 400, body: { error: { code: 'invalid_input', message: 'steps.1.depends_on.0: malformed', field: 'steps.1.depends_on.0', reason: 'malformed' } } });
    const r = await runCli(['dag', 'apply', 'etl.yaml'], { env: env(), cwd: dir });
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stderr, 'drover: etl.yaml: steps[1].depends_on[0]: malformed (step "load", line 6)\n');
    const sent = api.requests.at(-1)!;
    assert.equal(sent.method, 'POST');
    assert.equal(sent.path, '/v1/dags');
    assert.deepEqual(sent.body, { name: 'etl', steps: [{ name: 'extract', command: 'true' }, { name: 'load', depends_on: ['extract'], command: 'true' }] });
  });

  it('apply: created and unchanged', async () => {
    const dag = { id: 'D', name: 'etl', owner: 'tok', version: 2, description: null, params: null, hash: 'h', steps: [{}, {}], createdAt: '', firstCreatedAt: '' };
    answer = () => ({ status: 201, body: { dag, created: true } });
    const created = await runCli(['dag', 'apply', 'etl.yaml'], { env: env(), cwd: dir });
    assert.equal(created.stdout, 'applied DAG etl version 2 (2 steps)\n', created.stderr);
    answer = () => ({ status: 200, body: { dag, created: false } });
    const same = await runCli(['dag', 'apply', 'etl.yaml'], { env: env(), cwd: dir });
    assert.equal(same.stdout, 'DAG etl unchanged (version 2)\n', same.stderr);
    assert.equal(same.code, 0);
  });

  it('show NAME --version N asks for that version (the root\'s --version does not take it)', async () => {
    const step = { name: 'a', dependsOn: [], when: 'success', task: { name: 'etl/a', command: 'true', args: [], script: null, interpreter: [], env: {}, timeoutMs: null, retry: { maxRetries: 3 } } };
    answer = (path) =>
      path === '/v1/dag-runs'
        ? { status: 200, body: { runs: [], nextCursor: null } }
        : { status: 200, body: { dag: { id: 'D', name: 'etl', owner: 'me', version: 1, description: null, params: null, hash: 'h', steps: [step], createdAt: '2026-12-01T00:00:00Z', firstCreatedAt: '2026-12-01T00:00:00Z' } } };
    const r = await runCli(['dag', 'show', 'etl', '--version', '1'], { env: env(), cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^version: +1, applied 2026-12-01T00:00:00Z$/m);
    const asked = api.requests.filter((q) => q.path === '/v1/dags/etl').map((q) => q.query.get('version'));
    assert.ok(asked.includes('1'), JSON.stringify(asked));
    assert.match(r.stdout, /^a +- +success +3 +- +true$/m);
  });

  it('a run id prefix the server does not know: exit 1, named', async () => {
    answer = () => ({ status: 200, body: { runs: [], nextCursor: null } });
    const r = await runCli(['dag', 'status', '01jf8z00'], { env: env(), cwd: dir });
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'drover: DAG run not found: no run id starts with 01JF8Z00\n');
    assert.equal(api.requests.at(-1)!.query.get('id'), '01JF8Z00');
  });

  it('a 409 (retry of a running run) is one line, exit 1', async () => {
    answer = (path) => (path.endsWith('/retry') ? { status: 409, body: { error: { code: 'conflict', message: 'DAG run 01JF8Z0000000000000000RAN0 is still running; cancel it first, or wait until it ends' } } } : { status: 500, body: {} });
    const r = await runCli(['dag', 'retry', '01JF8Z0000000000000000RAN0'], { env: env(), cwd: dir });
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'drover: conflict: DAG run 01JF8Z0000000000000000RAN0 is still running; cancel it first, or wait until it ends\n');
  });
});
