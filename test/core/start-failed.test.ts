/** Start failures in the pure core: the attempt-end rule (no retry) and the messages both spawners share. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planAttemptEnd } from '../../src/core/attempt-end.js';
import { FakeClock } from '../../src/core/clock.js';
import { DEFAULT_RETRY_POLICY } from '../../src/core/retry-policy.js';
import { cwdProblemMessage, startFailureMessage, type StartFailure } from '../../src/core/start-failure.js';
import { attemptStateOf } from '../../src/core/task.js';

const PATH = '/usr/local/bin:/usr/bin:/bin';
const f = (o: Partial<StartFailure>): StartFailure => ({ file: 'x', code: 'ENOENT', detail: 'spawn x ENOENT', cwd: '/w/01H-1', inWorkDir: true, path: PATH, ...o });

describe('planAttemptEnd: start_failed', () => {
  it('fails the task at once with the result, without using a retry, whatever the budget', () => {
    const clock = new FakeClock();
    const end = { outcome: 'start_failed' as const, attempt: 1, exitCode: null, signal: null, error: 'cannot start foo: not found in PATH=/bin', durationMs: 1 };
    const plan = planAttemptEnd({ state: 'running', retry: { ...DEFAULT_RETRY_POLICY, maxRetries: 5 }, retriesUsed: 0, lostCount: 0, result: null }, end, clock.now());
    assert.equal(plan.state, 'failed');
    assert.equal(plan.retriesUsed, 0);
    assert.equal(plan.runAfter, null);
    assert.deepEqual(plan.result, { ...end });
    assert.deepEqual(plan.event, {
      from: 'running',
      to: 'failed',
      reason: 'start_failed',
      detail: { attempt: 1, outcome: 'start_failed', exitCode: null, signal: null, error: end.error },
    });
  });

  it('of a cancelled task only fills in the result', () => {
    const end = { outcome: 'start_failed' as const, attempt: 1, exitCode: null, signal: null, error: 'cannot start x: no such file', durationMs: 0 };
    const plan = planAttemptEnd({ state: 'cancelled', retry: { ...DEFAULT_RETRY_POLICY }, retriesUsed: 0, lostCount: 0, result: null }, end, 0);
    assert.equal(plan.state, 'cancelled');
    assert.equal(plan.event, null);
    assert.equal(plan.result?.outcome, 'start_failed');
  });

  it('is stored as attempt state failed (the attempts table keeps its states); other outcomes as themselves', () => {
    assert.equal(attemptStateOf('start_failed'), 'failed');
    for (const o of ['succeeded', 'failed', 'timed_out', 'cancelled', 'lost'] as const) assert.equal(attemptStateOf(o), o);
  });
});

describe('startFailureMessage', () => {
  it('a relative path: names the work directory and says how to fix it', () => {
    assert.equal(
      startFailureMessage(f({ file: './backup.sh' })),
      'cannot start ./backup.sh: not found in the work directory /w/01H-1 (a relative path resolves there; use an absolute path or --cwd)',
    );
  });
  it('a relative path with a task cwd: names that directory', () => {
    assert.equal(startFailureMessage(f({ file: 'bin/x', cwd: '/srv/app', inWorkDir: false })), "cannot start bin/x: not found in /srv/app (the task's cwd, where a relative path resolves)");
  });
  it('a bare name: names the PATH searched', () => {
    assert.equal(startFailureMessage(f({ file: 'foo' })), `cannot start foo: not found in PATH=${PATH}`);
  });
  it('an absolute path', () => {
    assert.equal(startFailureMessage(f({ file: '/opt/x' })), 'cannot start /opt/x: no such file');
  });
  it('a #! script whose interpreter is missing', () => {
    assert.equal(startFailureMessage(f({ file: '/w/.drover-script', shebang: '#!/nope/python' })), 'cannot start the script: the interpreter named on its first line (#!/nope/python) was not found');
  });
  it('permission denied, not executable, not a directory, unknown codes, no code', () => {
    assert.match(startFailureMessage(f({ file: './x', code: 'EACCES' })), /^cannot start \.\/x: permission denied \(the file is not executable/);
    assert.match(startFailureMessage(f({ file: 'x', code: 'EACCES' })), /^cannot start x: permission denied \(found in PATH=/);
    assert.match(startFailureMessage(f({ file: '/x', code: 'ENOEXEC' })), /^cannot start \/x: not an executable format \(a script needs a #! first line/);
    assert.equal(startFailureMessage(f({ file: '/etc/passwd/x', code: 'ENOTDIR' })), 'cannot start /etc/passwd/x: a component of its path is not a directory');
    assert.equal(startFailureMessage(f({ file: '/x', code: 'EWEIRD', detail: 'spawn /x EWEIRD' })), 'cannot start /x: EWEIRD (spawn /x EWEIRD)');
    assert.equal(startFailureMessage(f({ file: '/x', code: null, detail: 'spawn /x: argument 1 holds a NUL byte' })), 'cannot start /x: spawn /x: argument 1 holds a NUL byte');
  });
  it('a cwd problem names the directory and the worker', () => {
    assert.equal(cwdProblemMessage('/srv/gone', 'w1', 'missing'), "cannot start: the task's cwd /srv/gone does not exist on worker w1");
    assert.equal(cwdProblemMessage('/etc/passwd', 'w1', 'not_directory'), "cannot start: the task's cwd /etc/passwd is not a directory on worker w1");
    assert.equal(cwdProblemMessage('/root/x', 'w1', { code: 'EACCES' }), "cannot start: the task's cwd /root/x cannot be used (EACCES) on worker w1");
  });
});
