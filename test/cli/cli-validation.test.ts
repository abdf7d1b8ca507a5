/**
 * The real CLI, as a child process, on bad input: each case exits non-zero
 * with exactly one stderr line `drover: <message naming the flag>`, and makes
 * no HTTP request. Checked two ways: DROVER_URL points at a tripwire server
 * that records any request, and at a closed port (a request would turn into a
 * connection error instead of the validation message).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { closedPort, runCli, sendJson, startFakeApi, type FakeApi } from './fake-api.js';

const CASES: Array<{ name: string; args: string[]; stderr: RegExp; code?: number; noToken?: boolean }> = [
  { name: 'missing command', args: ['submit'], stderr: /^drover: missing command: drover submit -- CMD \[ARGS\.\.\.\]$/ },
  { name: 'missing command after --', args: ['submit', '--name', 'x', '--'], stderr: /^drover: missing command: drover submit -- CMD \[ARGS\.\.\.\]$/ },
  { name: '--retries -1', args: ['submit', '--retries', '-1', '--', 'true'], stderr: /^drover: invalid --retries "-1": expected an integer 0\.\.100$/ },
  { name: '--retries 1000', args: ['submit', '--retries', '1000', '--', 'true'], stderr: /^drover: invalid --retries "1000": expected an integer 0\.\.100$/ },
  { name: '--timeout 5x', args: ['submit', '--timeout', '5x', '--', 'true'], stderr: /^drover: invalid --timeout "5x": expected a duration/ },
  { name: '--env NOEQUALS', args: ['submit', '--env', 'NOEQUALS', '--', 'true'], stderr: /^drover: invalid --env "NOEQUALS": expected KEY=VALUE$/ },
  { name: '--label =v', args: ['submit', '--label', '=v', '--', 'true'], stderr: /^drover: invalid --label "=v"/ },
  { name: '--require NOEQUALS', args: ['submit', '--require', 'gpu', '--', 'true'], stderr: /^drover: invalid --require "gpu": expected KEY=VALUE$/ },
  { name: '--idempotency-key with a space', args: ['submit', '--idempotency-key', 'a b', '--', 'true'], stderr: /^drover: invalid --idempotency-key "a b": expected 1\.\.255 visible ASCII characters \(no spaces\)$/ },
  { name: '--idempotency-key empty', args: ['submit', '--idempotency-key', '', '--', 'true'], stderr: /^drover: invalid --idempotency-key "": expected 1\.\.255/ },
  { name: '--idempotency-key too long', args: ['submit', '--idempotency-key', 'k'.repeat(256), '--', 'true'], stderr: /^drover: invalid --idempotency-key "k+": expected 1\.\.255/ },
  { name: '--idempotency-key with an escape', args: ['submit', '--idempotency-key', 'k\x1b[2J', '--', 'true'], stderr: /^drover: invalid --idempotency-key "k\\x1b\[2J": expected/ },
  { name: '--retry-factor 0', args: ['submit', '--retry-factor', '0', '--', 'true'], stderr: /^drover: invalid --retry-factor "0"/ },
  { name: '--priority 5000', args: ['submit', '--priority', '5000', '--', 'true'], stderr: /^drover: invalid --priority "5000"/ },
  { name: 'unknown option before the command', args: ['submit', 'sh', '-c', 'x'], stderr: /^drover: unknown option '-c' \(put the command after --/ },
  { name: 'malformed id on show', args: ['show', 'x'], stderr: /^drover: invalid task id "x": give the full id or at least 6 characters of it$/ },
  { name: 'malformed id on logs', args: ['logs', '-f', 'nope'], stderr: /^drover: invalid task id "nope"/ },
  { name: 'malformed id on cancel', args: ['cancel', '01JF'], stderr: /^drover: invalid task id "01JF": give the full id or at least 6 characters of it$/ },
  { name: 'malformed id on retry', args: ['retry', 'ZZZ'], stderr: /^drover: invalid task id "ZZZ"/ },
  { name: 'bad --attempt', args: ['logs', '--attempt', '0', '01JF0000000000000000000000'], stderr: /^drover: invalid --attempt "0"/ },
  { name: 'bad --state', args: ['ls', '--state', 'done'], stderr: /^drover: invalid --state "done": expected one of/ },
  { name: 'bad --limit', args: ['ls', '--limit', '0'], stderr: /^drover: invalid --limit "0"/ },
  { name: 'bad --order', args: ['ls', '--order', 'newest'], stderr: /^drover: invalid --order "newest": expected created or ended$/ },
  { name: '--order ended without a state it lists', args: ['ls', '--order', 'ended', '--state', 'running'], stderr: /^drover: --order ended needs --state failed or --state cancelled$/ },
  { name: 'bad --role', args: ['token', 'create', '--name', 'x', '--role', 'root'], stderr: /^drover: invalid --role "root"/ },
  { name: 'token without subcommand', args: ['token'], stderr: /^drover: missing subcommand: drover token create\|ls\|revoke$/ },
  { name: 'unknown command', args: ['frobnicate'], stderr: /^drover: unknown command 'frobnicate'/ },
  { name: 'unknown option', args: ['ls', '--colour'], stderr: /^drover: unknown option '--colour'/ },
  { name: 'server --port', args: ['server', '--port', '70000'], stderr: /^drover: invalid --port "70000": expected an integer 0\.\.65535$/ },
  { name: 'server --heartbeat', args: ['server', '--heartbeat', '5x'], stderr: /^drover: invalid --heartbeat "5x"/ },
  { name: 'server --lease not above --heartbeat', args: ['server', '--heartbeat', '5s', '--lease', '2s'], stderr: /^drover: invalid --lease "2s": must be longer than --heartbeat \(5s\)$/ },
  { name: 'server --db-pool', args: ['server', '--db-pool', '0'], stderr: /^drover: invalid --db-pool "0"/ },
  { name: 'server --db', args: ['server', '--db', 'mysql://x'], stderr: /^drover: invalid --db "mysql:\/\/x": expected sqlite:PATH or postgres:\/\// },
  { name: 'worker --slots', args: ['worker', '--server', 'http://127.0.0.1:1', '--token', 't', '--slots', 'many'], stderr: /^drover: invalid --slots "many"/ },
  { name: 'worker --executor', args: ['worker', '--server', 'http://127.0.0.1:1', '--token', 't', '--executor', 'docker'], stderr: /^drover: invalid --executor "docker": expected one of process, noop$/ },
  { name: 'worker --drain-timeout', args: ['worker', '--server', 'http://127.0.0.1:1', '--token', 't', '--drain-timeout', 'soon'], stderr: /^drover: invalid --drain-timeout "soon": expected a duration such as 30 \(seconds\), 500ms, 30s, 5m or 1h30m$/ },
  { name: 'worker without token', args: ['worker', '--server', 'http://127.0.0.1:1'], stderr: /^drover: missing --token/, noToken: true },
  { name: 'dev --workers', args: ['dev', '--workers', '100'], stderr: /^drover: invalid --workers "100"/ },
];

describe('CLI rejects bad input locally', () => {
  let tripwire: FakeApi;
  let deadUrl: string;
  let cwd: string;

  before(async () => {
    tripwire = await startFakeApi((_req, res) => sendJson(res, 500, { error: { code: 'tripwire', message: 'no request expected' } }));
    deadUrl = `http://127.0.0.1:${await closedPort()}`;
    cwd = mkdtempSync(join(tmpdir(), 'drover-cli-'));
  });
  after(async () => {
    await tripwire.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  for (const c of CASES) {
    it(c.name, async () => {
      for (const url of [tripwire.url, deadUrl]) {
        const r = await runCli(c.args, { env: { DROVER_URL: url, ...(c.noToken ? {} : { DROVER_TOKEN: 'tok' }) }, cwd });
        assert.equal(r.code, c.code ?? 2, `exit status; stderr: ${r.stderr}`);
        const lines = r.stderr.split('\n').filter(Boolean);
        assert.equal(lines.length, 1, `one stderr line, got: ${JSON.stringify(r.stderr)}`);
        assert.match(lines[0]!, c.stderr);
        assert.doesNotMatch(r.stderr, /cannot reach/);
        assert.equal(r.stdout, '');
      }
      assert.equal(tripwire.requests.length, 0, 'no HTTP request');
    });
  }

  it('a bad DROVER_URL is reported as such', async () => {
    const r = await runCli(['ls'], { env: { DROVER_URL: 'not a url' }, cwd });
    assert.equal(r.code, 2);
    assert.equal(r.stderr, 'drover: invalid DROVER_URL "not a url": expected a URL such as http://127.0.0.1:7070\n');
  });

  it('an unreachable server is one clear line, exit 1', async () => {
    const r = await runCli(['ls'], { env: { DROVER_URL: deadUrl, DROVER_TOKEN: 't' }, cwd });
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `drover: cannot reach Drover at ${deadUrl} (url from DROVER_URL): ECONNREFUSED\n`);
  });

  it('--help and --version exit 0', async () => {
    const h = await runCli(['submit', '--help'], { cwd });
    assert.equal(h.code, 0);
    assert.match(h.stdout, /Usage: drover submit \[options\] -- CMD \[ARGS\.\.\.\]/);
    const w = await runCli(['worker', '--help'], { cwd });
    assert.match(w.stdout, /heartbeats every 5 s/);
    assert.match(w.stdout, /15 s/);
    assert.match(w.stdout, /--drain-timeout <duration>/);
    assert.match(w.stdout, /SIGTERM\/SIGINT drains the worker: it accepts no more work, lets running\nattempts finish for up to --drain-timeout \(default 30 s\)/);
    const v = await runCli(['--version'], { cwd });
    assert.equal(v.code, 0);
    assert.match(v.stdout, /^\d+\.\d+\.\d+\n$/);
  });
});
