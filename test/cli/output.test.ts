/** Formatting and the one-line error contract. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, ConnectionError } from '../../src/client/errors.js';
import type { Task } from '../../src/client/types.js';
import { waitOutcome } from '../../src/cli/follow-logs.js';
import { describeError, formatAge, formatExit, formatMs, formatTable, NOT_AUTHENTICATED } from '../../src/cli/output.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { makeTask } from './fake-api.js';

describe('formatting', () => {
  it('aligns table columns without trailing spaces', () => {
    assert.equal(formatTable(['A', 'BB', 'C'], [['xxx', 'y', 'z'], ['1', '2\n3', '']]), 'A    BB   C\nxxx  y    z\n1    2 3\n');
  });
  it('formats ages, exits and durations', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(formatAge('2025-12-31T23:59:15Z', now), '45s');
    assert.equal(formatAge('2025-12-31T23:48:00Z', now), '12m');
    assert.equal(formatAge('2025-12-31T21:00:00Z', now), '3h');
    assert.equal(formatAge('2025-12-27T00:00:00Z', now), '5d');
    assert.equal(formatAge(null, now), '-');
    assert.equal(formatExit({ exitCode: 3, signal: null }), '3');
    assert.equal(formatExit({ exitCode: null, signal: 'SIGKILL' }), 'SIGKILL');
    assert.equal(formatExit(null), '-');
    assert.equal(formatMs(250), '250ms');
    assert.equal(formatMs(1500), '1.5s');
    assert.equal(formatMs(3_600_000), '1h');
    assert.equal(formatMs(5_400_000), '1h30m');
  });
});

describe('describeError', () => {
  it('bad input exits 2; everything else 1', () => {
    assert.deepEqual(describeError(new UsageError('invalid --x "y": z')), { message: 'invalid --x "y": z', exitCode: 2 });
    assert.deepEqual(describeError(new ApiError(400, { code: 'invalid_input', message: 'm', field: 'timeout', reason: 'not a duration' })), {
      message: 'invalid timeout: not a duration',
      exitCode: 2,
    });
    assert.deepEqual(describeError(new ConnectionError('http://h:1', 'ECONNREFUSED')), { message: 'cannot reach Drover at http://h:1: ECONNREFUSED', exitCode: 1 });
    assert.deepEqual(describeError(new ApiError(409, { code: 'conflict', message: 'task ended' })), { message: 'conflict: task ended', exitCode: 1 });
  });
  it('words a 401 by whether a token was sent', () => {
    const e401 = new ApiError(401, { code: 'unauthorized', message: 'invalid or revoked token' });
    assert.equal(describeError(e401, null).message, NOT_AUTHENTICATED);
    const noToken = { url: 'http://h', token: null, urlSource: 'default', tokenSource: null, credentialsPath: null } as const;
    assert.equal(describeError(e401, noToken).message, NOT_AUTHENTICATED);
    const env = { ...noToken, token: 't', tokenSource: 'env' } as const;
    assert.equal(describeError(e401, env).message, 'not authenticated: http://h rejected the token from DROVER_TOKEN (invalid or revoked token)');
  });
});

describe('waitOutcome', () => {
  const task = (over: Record<string, unknown>) => makeTask(over) as unknown as Task;
  const result = (r: Record<string, unknown>) => ({ outcome: 'failed', attempt: 1, exitCode: null, signal: null, error: null, durationMs: 1, ...r });
  it('mirrors the task', () => {
    assert.deepEqual(waitOutcome(task({ state: 'succeeded', result: result({ outcome: 'succeeded', exitCode: 0 }) })), { exitCode: 0, message: null });
    assert.deepEqual(waitOutcome(task({ state: 'failed', result: result({ exitCode: 42 }) })), { exitCode: 42, message: null });
    const t = waitOutcome(task({ state: 'failed', result: result({ outcome: 'timed_out', signal: 'SIGTERM' }) }));
    assert.equal(t.exitCode, 1);
    assert.match(t.message!, /failed: timed out \(attempt 1\)$/);
    const spawnFail = waitOutcome(task({ state: 'failed', result: result({ error: 'spawn nope ENOENT' }) }));
    assert.equal(spawnFail.exitCode, 1);
    assert.match(spawnFail.message!, /failed: spawn nope ENOENT \(attempt 1\)$/);
    assert.equal(waitOutcome(task({ state: 'cancelled' })).exitCode, 1);
  });
});
