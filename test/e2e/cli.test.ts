/** The `drover` CLI against a real server and worker: what a user types. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { BIN, startCluster, type Cluster } from './harness.js';

function drover(c: Cluster, args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, DROVER_URL: c.url, DROVER_TOKEN: c.api.token, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe('e2e: the CLI', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ workers: 1, slots: 2 });
  });
  after(async () => c?.close());

  it('submit prints an id; show, ls and logs report what happened', async () => {
    const sub = await drover(c, ['submit', '--name', 'greet', '--retries', '0', '--env', 'WHO=world', '--label', 'team=ops', '--', 'sh', '-c', 'echo "hello $WHO"; exit 3']);
    assert.equal(sub.code, 0, sub.stderr);
    const id = sub.stdout.trim();
    assert.match(id, /^[0-9A-Z]{26}$/);
    const logs = await drover(c, ['logs', '-f', id]);
    assert.equal(logs.stdout, 'hello world\n');
    const show = await drover(c, ['show', '--json', id]);
    const detail = JSON.parse(show.stdout);
    assert.equal(detail.task.state, 'failed');
    assert.equal(detail.task.result.exitCode, 3);
    assert.deepEqual(detail.task.labels, { team: 'ops' });
    const human = await drover(c, ['show', id]);
    assert.match(human.stdout, /failed/);
    assert.match(human.stdout, /retries_exhausted/);
    const ls = await drover(c, ['ls', '--state', 'failed']);
    assert.match(ls.stdout, new RegExp(id));
  });

  it('submit --wait streams the output and exits with the task\'s exit code', async () => {
    const r = await drover(c, ['submit', '--wait', '--retries', '0', '--', 'sh', '-c', 'echo out; exit 7']);
    assert.equal(r.stdout.trim().split('\n').at(-1), 'out');
    assert.equal(r.code, 7);
    const ok = await drover(c, ['submit', '--wait', '--', 'echo', 'fine']);
    assert.equal(ok.code, 0);
    assert.match(ok.stdout, /fine\n$/);
  });

  it('cancel and retry', async () => {
    const id = (await drover(c, ['submit', '--', 'sleep', '60'])).stdout.trim();
    const cancel = await drover(c, ['cancel', id]);
    assert.equal(cancel.code, 0, cancel.stderr);
    assert.match(cancel.stdout, /cancelled/);
    const again = await drover(c, ['cancel', id]);
    assert.notEqual(again.code, 0);
    assert.equal(again.stderr.trim().split('\n').length, 1);
    const retry = await drover(c, ['retry', id]);
    assert.equal(retry.code, 0, retry.stderr);
    assert.match(retry.stdout, /waiting|running/);
    await drover(c, ['cancel', id]);
  });

  it('bad input and bad credentials get one clear line and a non-zero exit', async () => {
    const unknown = await drover(c, ['show', '01ARZ3NDEKTSV4RRFFQ69G5FAV']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /not found/);
    const noAuth = await drover(c, ['ls'], { DROVER_TOKEN: 'drv_nope' });
    assert.notEqual(noAuth.code, 0);
    assert.equal(noAuth.stderr.trim().split('\n').length, 1);
    assert.match(noAuth.stderr, /token/);
    const badDuration = await drover(c, ['submit', '--timeout', '3 weeks', '--', 'true']);
    assert.equal(badDuration.code, 2);
    assert.match(badDuration.stderr, /--timeout/);
  });

  it('token create / ls / revoke', async () => {
    const made = await drover(c, ['token', 'create', '--name', 'carol']);
    assert.equal(made.code, 0, made.stderr);
    const secret = made.stdout.trim();
    const mine = await drover(c, ['submit', '--', 'true'], { DROVER_TOKEN: secret });
    assert.equal(mine.code, 0, mine.stderr);
    const ls = await drover(c, ['token', 'ls', '--json']);
    const rec = JSON.parse(ls.stdout).tokens?.find((t: any) => t.name === 'carol') ?? JSON.parse(ls.stdout).find((t: any) => t.name === 'carol');
    assert.ok(rec);
    const rev = await drover(c, ['token', 'revoke', rec.id]);
    assert.equal(rev.code, 0, rev.stderr);
    const denied = await drover(c, ['ls'], { DROVER_TOKEN: secret });
    assert.notEqual(denied.code, 0);
  });

  it('workers lists the agent; workers drain names a bad or unknown id clearly', async () => {
    const ls = await drover(c, ['workers', '--json']);
    assert.equal(ls.code, 0, ls.stderr);
    assert.ok(JSON.parse(ls.stdout).workers.some((w: any) => w.id === 'w1' && w.state === 'connected'));
    const unknown = await drover(c, ['workers', 'drain', 'nosuch']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /not found/);
    const bad = await drover(c, ['workers', 'drain', 'bad id']);
    assert.equal(bad.code, 2);
    assert.equal(bad.stderr.trim().split('\n').length, 1);
  });
});
