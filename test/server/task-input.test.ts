/** Submit-body rules of task-input.ts that are new with issue 10: cwd, run later, the shebang default. Pure, fake time. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidInputError } from '../../src/core/errors.js';
import { defaultInterpreter, MAX_SCHEDULE_AHEAD_MS, toRunAfter, toTaskSpec } from '../../src/server/task-input.js';

const NOW = Date.parse('2026-12-01T12:00:00Z');

function fieldOf(fn: () => unknown): { field: string; reason: string } {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof InvalidInputError, String(err));
    return { field: err.field, reason: err.reason };
  }
  assert.fail('expected InvalidInputError');
}

describe('toTaskSpec: cwd', () => {
  it('stores an absolute cwd; none is null', () => {
    assert.equal(toTaskSpec({ command: 'ls', cwd: '/srv/app' }).cwd, '/srv/app');
    assert.equal(toTaskSpec({ command: 'ls' }).cwd, null);
  });
  it('a relative cwd or one with NUL is a 400 naming cwd', () => {
    assert.equal(fieldOf(() => toTaskSpec({ command: 'ls', cwd: 'srv/app' })).field, 'cwd');
    assert.match(fieldOf(() => toTaskSpec({ command: 'ls', cwd: './x' })).reason, /absolute path/);
    assert.equal(fieldOf(() => toTaskSpec({ command: 'ls', cwd: '/a\0b' })).field, 'cwd');
  });
});

describe('toTaskSpec: env names', () => {
  it('a name with "=" or an empty name is refused naming env (it would set another variable, or one nobody can read)', () => {
    for (const name of ['A=B', '=Z', 'A=', '']) {
      const e = fieldOf(() => toTaskSpec({ command: 'env', env: { [name]: 'x' } }));
      assert.equal(e.field, 'env', name);
    }
    assert.match(fieldOf(() => toTaskSpec({ command: 'env', env: { 'A=B': 'x' } })).reason, /must not contain "="/);
  });
  it('other names pass as given (exec() takes any name without "=")', () => {
    assert.deepEqual(toTaskSpec({ command: 'env', env: { PATH_X: '1', 'my.var': '2', 'A B': '3' } }).env, { PATH_X: '1', 'my.var': '2', 'A B': '3' });
  });
});

describe('toTaskSpec: retry delays', () => {
  it('a first delay alone raises the default cap to it; a cap alone lowers the default first delay to it', () => {
    const big = toTaskSpec({ command: 'true', retry: { baseDelay: '2h' } }).retry;
    assert.deepEqual([big.baseDelayMs, big.maxDelayMs], [7_200_000, 7_200_000]);
    const small = toTaskSpec({ command: 'true', retry: { maxDelay: '500ms' } }).retry;
    assert.deepEqual([small.baseDelayMs, small.maxDelayMs], [500, 500]);
    const plain = toTaskSpec({ command: 'true', retry: { baseDelay: '10s' } }).retry;
    assert.deepEqual([plain.baseDelayMs, plain.maxDelayMs], [10_000, 3_600_000], 'a first delay under the default cap keeps it');
  });
  it('two given values that conflict are a 400 naming retry.maxDelay, with both values', () => {
    const e = fieldOf(() => toTaskSpec({ command: 'true', retry: { baseDelay: '2h', maxDelay: '1h' } }));
    assert.equal(e.field, 'retry.maxDelay');
    assert.match(e.reason, /must not be less than retry.baseDelay \(1h0m < 2h0m\)/);
  });
});

describe('toTaskSpec: the interpreter of a script', () => {
  it('none for a #! script (executed as a file), sh otherwise, the given one always', () => {
    assert.deepEqual(toTaskSpec({ script: '#!/usr/bin/env python3\nprint(1)\n' }).interpreter, []);
    assert.deepEqual(toTaskSpec({ script: 'echo hi\n' }).interpreter, ['sh']);
    assert.deepEqual(toTaskSpec({ script: '#!/bin/bash\necho\n', interpreter: ['sh'] }).interpreter, ['sh']);
    assert.deepEqual(defaultInterpreter(' #!/bin/sh'), ['sh']);
  });
});

describe('toRunAfter', () => {
  it('neither field: now (null)', () => assert.equal(toRunAfter({}, NOW), null));
  it('runAt with a zone', () => {
    assert.equal(toRunAfter({ runAt: '2026-12-01T13:00:00Z' }, NOW), NOW + 3_600_000);
    assert.equal(toRunAfter({ runAt: '2026-12-01T14:00:00+01:00' }, NOW), NOW + 3_600_000);
    assert.equal(toRunAfter({ runAt: '2026-12-01T12:00:00.250Z' }, NOW), NOW + 250);
  });
  it('a past or present runAt runs now', () => {
    assert.equal(toRunAfter({ runAt: '2020-01-01T00:00:00Z' }, NOW), null);
    assert.equal(toRunAfter({ runAt: '2026-12-01T12:00:00Z' }, NOW), null);
  });
  it('delay as milliseconds or a duration string; 0 runs now', () => {
    assert.equal(toRunAfter({ delay: 1500 }, NOW), NOW + 1500);
    assert.equal(toRunAfter({ delay: '5m' }, NOW), NOW + 300_000);
    assert.equal(toRunAfter({ delay: 0 }, NOW), null);
  });
  it('bad input names the field', () => {
    assert.equal(fieldOf(() => toRunAfter({ runAt: '2026-12-01T13:00:00' }, NOW)).field, 'runAt'); // no zone
    assert.match(fieldOf(() => toRunAfter({ runAt: 'tomorrow' }, NOW)).reason, /ISO 8601 time with a zone/);
    assert.equal(fieldOf(() => toRunAfter({ runAt: '2026-13-01T13:00:00Z' }, NOW)).field, 'runAt');
    assert.equal(fieldOf(() => toRunAfter({ runAt: '2028-12-01T13:00:00Z' }, NOW)).field, 'runAt'); // > 366 days
    assert.equal(fieldOf(() => toRunAfter({ delay: 'soon' }, NOW)).field, 'delay');
    assert.equal(fieldOf(() => toRunAfter({ delay: MAX_SCHEDULE_AHEAD_MS + 1 }, NOW)).field, 'delay');
    const both = fieldOf(() => toRunAfter({ runAt: '2026-12-01T13:00:00Z', delay: 5 }, NOW));
    assert.equal(both.field, 'delay');
    assert.match(both.reason, /not both/);
  });
});
