/**
 * Task outputs end to end, with a real server and a real worker: a task
 * writes KEY=VALUE lines to $DROVER_OUTPUT, `drover show` prints them and the
 * API returns them; a file that breaks the rules fails the attempt (retries
 * apply) naming the line; a failed process's file is ignored.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { BIN, startCluster, type Cluster } from './harness.js';

function drover(c: Cluster, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, DROVER_URL: c.url, DROVER_TOKEN: c.api.token, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe('e2e: task outputs (DROVER_OUTPUT)', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ workers: 1, slots: 2 });
  });
  after(async () => c?.close());

  /** The id of the one task named `name`. */
  const idOf = async (name: string): Promise<string> => {
    const r = await c.api.req('GET', `/v1/tasks?name=${encodeURIComponent(name)}`);
    assert.equal(r.body.tasks.length, 1, r.text);
    return r.body.tasks[0].id;
  };

  it('drover submit --wait, then drover show prints rows=42 and the API returns outputs {rows: "42"}', async () => {
    const sub = await drover(c, ['submit', '--wait', '--name', 'outputs-rows', '--', 'sh', '-c', 'echo rows=42 >> "$DROVER_OUTPUT"']);
    assert.equal(sub.code, 0, sub.stderr);
    const id = await idOf('outputs-rows');
    const show = await drover(c, ['show', id]);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /\nOUTPUTS\nrows=42\n\nATTEMPTS\n/);
    const { task } = await c.api.task(id);
    assert.equal(task.state, 'succeeded');
    assert.deepEqual(task.outputs, { rows: '42' });
    assert.deepEqual(task.result, { outcome: 'succeeded', attempt: 1, exitCode: 0, signal: null, error: null, durationMs: task.result.durationMs });
    const json = await drover(c, ['show', '--json', id]);
    assert.deepEqual(JSON.parse(json.stdout).task.outputs, { rows: '42' });
    // The task list is summaries: no outputs there.
    const list = await c.api.req('GET', `/v1/tasks?name=outputs-rows`);
    assert.ok(!('outputs' in list.body.tasks[0]));
  });

  it('a task without outputs shows null, and drover show has no OUTPUTS section', async () => {
    const done = await c.api.waitDone(await c.api.submit({ command: 'true' }));
    assert.equal(done.task.state, 'succeeded');
    assert.equal(done.task.outputs, null);
    assert.doesNotMatch((await drover(c, ['show', done.task.id])).stdout, /OUTPUTS/);
  });

  it('a bad file fails the attempt naming the line; the retry that writes a good one succeeds with its outputs', async () => {
    const script = 'if [ "$DROVER_ATTEMPT" = 1 ]; then printf "a=1\\n\\nrows 42\\n" > "$DROVER_OUTPUT"; else echo rows=43 > "$DROVER_OUTPUT"; fi';
    const done = await c.api.waitDone(await c.api.submit({ script, retry: { maxRetries: 2, baseDelay: '10ms' } }));
    assert.equal(done.task.state, 'succeeded');
    assert.deepEqual(done.task.outputs, { rows: '43' });
    assert.deepEqual(
      done.attempts.map((a: any) => [a.number, a.state, a.exitCode, a.error]),
      [
        [1, 'failed', 0, 'DROVER_OUTPUT line 3: expected KEY=VALUE'],
        [2, 'succeeded', 0, null],
      ],
    );
    const failed = done.events.find((e: any) => e.reason === 'attempt_failed');
    assert.equal(failed.detail.error, 'DROVER_OUTPUT line 3: expected KEY=VALUE');
  });

  it('with no retry left the task fails: the result keeps exit code 0 and says why; submit --wait exits 1 saying so', async () => {
    const sub = await drover(c, ['submit', '--wait', '--retries', '0', '--name', 'outputs-bad', '--', 'sh', '-c', 'echo rows=1 > "$DROVER_OUTPUT"; echo ROWS=2 >> "$DROVER_OUTPUT"']);
    assert.equal(sub.code, 1);
    assert.match(sub.stderr, /^drover: task [0-9A-Z]{26} failed: DROVER_OUTPUT line 2: key "ROWS" given twice \(first on line 1; keys are compared ignoring case\) \(attempts 1, /);
    const { task } = await c.api.task(await idOf('outputs-bad'));
    assert.equal(task.outputs, null);
    assert.equal(task.result.outcome, 'failed');
    assert.equal(task.result.exitCode, 0);
    assert.equal(task.result.error, 'DROVER_OUTPUT line 2: key "ROWS" given twice (first on line 1; keys are compared ignoring case)');
  });

  it('a process that fails leaves no outputs (its file is ignored), and its exit code is the result', async () => {
    const done = await c.api.waitDone(await c.api.submit({ script: 'echo rows=42 > "$DROVER_OUTPUT"; exit 3', retry: { maxRetries: 0 } }));
    assert.equal(done.task.state, 'failed');
    assert.equal(done.task.outputs, null);
    assert.equal(done.task.result.exitCode, 3);
    assert.equal(done.task.result.error, null);
  });

  it('a symbolic link in the file\'s place fails the attempt; the worker reads nothing through it', async () => {
    const done = await c.api.waitDone(await c.api.submit({ script: 'ln -s /etc/passwd "$DROVER_OUTPUT"', retry: { maxRetries: 0 } }));
    assert.equal(done.task.state, 'failed');
    assert.equal(done.task.result.error, 'DROVER_OUTPUT: is a symbolic link (not followed: write a regular file)');
    assert.equal(done.task.outputs, null);
    assert.ok(!JSON.stringify(done).includes('root:'), 'nothing of /etc/passwd reached the server');
  });
});
