/**
 * The runner on both spawners (issue 10): the task's cwd, start failures
 * reported the same way by each (start_failed, one message), #! scripts run
 * as files, and how a signal death and a timeout are reported.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runAttempt } from '../../src/worker/process-runner.js';
import { TASK_PATH } from '../../src/worker/task-env.js';
import { collect, spec, SPAWNERS, tempDir } from './helpers.js';

for (const spawner of SPAWNERS) describe(`start failures, cwd and #! scripts (${spawner} spawner)`, { timeout: 30_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  let work: string;
  before(() => {
    tmp = tempDir('drover-start-');
    work = path.join(tmp.dir, 'work');
    mkdirSync(work);
  });
  after(() => tmp.remove());
  const opts = () => ({ workDir: work, killGraceMs: 300, spawner, workerId: 'w-test' });

  it('runs in the task cwd; HOME and DROVER_OUTPUT_DIR stay the work directory', async () => {
    const app = path.join(tmp.dir, 'app');
    mkdirSync(app);
    const c = collect(spec({ command: 'sh', args: ['-c', 'pwd; echo "$HOME"; echo "$DROVER_OUTPUT_DIR"'], cwd: app }), opts());
    const r = await c.run.result;
    assert.equal(r.outcome, 'succeeded', c.text('stderr'));
    const [pwd, home, out] = c.text('stdout').split('\n');
    assert.equal(pwd, app);
    assert.equal(path.dirname(home!), work);
    assert.equal(out, path.join(home!, 'out'));
  });

  it('a relative command resolves in the task cwd', async () => {
    const app = path.join(tmp.dir, 'app2');
    mkdirSync(app);
    writeFileSync(path.join(app, 'backup.sh'), '#!/bin/sh\necho backed up\n', { mode: 0o755 });
    chmodSync(path.join(app, 'backup.sh'), 0o755);
    const c = collect(spec({ command: './backup.sh', cwd: app }), opts());
    assert.equal((await c.run.result).outcome, 'succeeded');
    assert.equal(c.text('stdout'), 'backed up\n');
  });

  it('a missing cwd, or one that is a file: start_failed naming the directory and the worker', async () => {
    const gone = path.join(tmp.dir, 'no-such-dir');
    let r = await runAttempt(spec({ command: 'true', cwd: gone }), opts()).result;
    assert.deepEqual(r, { outcome: 'start_failed', exitCode: null, signal: null, error: `cannot start: the task's cwd ${gone} does not exist on worker w-test`, durationMs: 0 });
    const file = path.join(tmp.dir, 'a-file');
    writeFileSync(file, 'x');
    r = await runAttempt(spec({ command: 'true', cwd: file }), opts()).result;
    assert.equal(r.outcome, 'start_failed');
    assert.equal(r.error, `cannot start: the task's cwd ${file} is not a directory on worker w-test`);
  });

  it('./backup.sh without a cwd: not found in the work directory, with the fix', async () => {
    const r = await runAttempt(spec({ command: './backup.sh' }), opts()).result;
    assert.equal(r.outcome, 'start_failed');
    assert.match(
      r.error!,
      new RegExp(`^cannot start \\./backup\\.sh: not found in the work directory ${work}/01TESTTASK-1-\\S+ \\(a relative path resolves there; use an absolute path or --cwd\\)$`),
    );
  });

  it('a bare name: not found in the task PATH; permission denied; not an executable format (native)', async () => {
    let r = await runAttempt(spec({ command: 'drover-nope' }), opts()).result;
    assert.equal(r.error, `cannot start drover-nope: not found in PATH=${TASK_PATH}`);
    r = await runAttempt(spec({ command: 'drover-nope', env: { PATH: '/x:/y' } }), opts()).result;
    assert.equal(r.error, 'cannot start drover-nope: not found in PATH=/x:/y');
    const noexec = path.join(tmp.dir, 'noexec.sh');
    writeFileSync(noexec, '#!/bin/sh\n', { mode: 0o644 });
    chmodSync(noexec, 0o644);
    r = await runAttempt(spec({ command: noexec }), opts()).result;
    assert.equal(r.outcome, 'start_failed');
    assert.match(r.error!, /^cannot start \S+noexec\.sh: permission denied/);
    // Node's child_process execs through glibc's execvp, which runs a file the kernel refuses (ENOEXEC)
    // through /bin/sh as a shell would; the addon's posix_spawn reports ENOEXEC. (docs/architecture.md.)
    if (spawner !== 'native') return;
    const garbage = path.join(tmp.dir, 'garbage');
    writeFileSync(garbage, '\x7fELF-not-really\n', { mode: 0o755 });
    chmodSync(garbage, 0o755);
    r = await runAttempt(spec({ command: garbage }), opts()).result;
    assert.equal(r.outcome, 'start_failed');
    assert.match(r.error!, /^cannot start \S+garbage: not an executable format/);
  });

  it('a #! script with no interpreter runs as a file (python3 through env)', async () => {
    const c = collect(spec({ script: '#!/usr/bin/env python3\nimport sys\nprint("py", sys.argv[0].endswith(".drover-script"))\n', interpreter: [] }), opts());
    const r = await c.run.result;
    assert.equal(r.outcome, 'succeeded', c.text('stderr'));
    assert.equal(c.text('stdout'), 'py True\n');
  });

  it('a #! script whose interpreter is missing: start_failed naming the line', async () => {
    const r = await runAttempt(spec({ script: '#!/nonexistent/interp\necho\n', interpreter: [] }), opts()).result;
    assert.equal(r.outcome, 'start_failed');
    assert.equal(r.error, 'cannot start the script: the interpreter named on its first line (#!/nonexistent/interp) was not found');
  });

  it('a script without #! and no interpreter still runs under sh', async () => {
    const c = collect(spec({ script: 'echo "$0" | grep -q drover-script && echo sh-ok\n', interpreter: [] }), opts());
    assert.equal((await c.run.result).outcome, 'succeeded');
    assert.equal(c.text('stdout'), 'sh-ok\n');
  });

  it('a signal death carries the signal name; a timeout carries outcome timed_out', async () => {
    const killed = await runAttempt(spec({ command: 'sh', args: ['-c', 'kill -KILL $$'] }), opts()).result;
    assert.deepEqual([killed.outcome, killed.exitCode, killed.signal], ['failed', null, 'SIGKILL']);
    const timed = await runAttempt(spec({ command: 'sleep', args: ['10'], timeoutMs: 100 }), opts()).result;
    assert.equal(timed.outcome, 'timed_out');
    assert.equal(timed.error, 'timed out after 100 ms');
  });
});
