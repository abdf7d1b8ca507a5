import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConflictError, IllegalTransitionError, InvalidInputError, isDroverError, NotFoundError, UnavailableError } from '../../src/core/errors.js';

describe('errors', () => {
  it('carry code, HTTP status and retryability', () => {
    const cases = [
      [new InvalidInputError('retry.factor', 'must be between 1 and 10'), 'invalid_input', 400, false],
      [new NotFoundError('task', 'X'), 'not_found', 404, false],
      [new ConflictError('task is succeeded'), 'conflict', 409, false],
      [new IllegalTransitionError('succeeded', 'waiting', 'manual_retry'), 'illegal_transition', 409, false],
      [new UnavailableError('disk full'), 'unavailable', 503, true],
    ] as const;
    for (const [e, code, status, retryable] of cases) {
      assert.equal(e.code, code);
      assert.equal(e.httpStatus, status);
      assert.equal(e.retryable, retryable);
      assert.ok(isDroverError(e));
      assert.ok(e instanceof Error);
    }
    assert.equal(isDroverError(new Error('x')), false);
    assert.equal(isDroverError('x'), false);
  });

  it('InvalidInputError names the field and the reason', () => {
    const e = new InvalidInputError('timeout', 'not a duration');
    assert.equal(e.message, 'timeout: not a duration');
    assert.deepEqual(e.toJSON(), { code: 'invalid_input', message: 'timeout: not a duration', field: 'timeout', reason: 'not a duration' });
    assert.deepEqual(new NotFoundError('task', 'ABC').toJSON(), { code: 'not_found', message: 'task ABC not found' });
  });
});
