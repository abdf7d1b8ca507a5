import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeTime } from 'ulid';
import { isTaskId, newTaskId, TASK_ID_PATTERN } from '../../src/core/ids.js';

// Far in the future so this file's monotonic generator never saw a later time.
const T = 4_000_000_000_000;

describe('task ids', () => {
  it('are 26-character ULIDs carrying their creation time', () => {
    const id = newTaskId(T);
    assert.equal(id.length, 26);
    assert.ok(isTaskId(id));
    assert.equal(decodeTime(id), T);
  });

  it('sort by creation time', () => {
    const ids = [T + 10, T + 11, T + 500, T + 86_400_000].map((t) => newTaskId(t));
    assert.deepEqual([...ids].sort(), ids);
  });

  it('still sort in creation order within one millisecond', () => {
    const t = T + 100_000_000;
    const ids = Array.from({ length: 1000 }, () => newTaskId(t));
    assert.equal(new Set(ids).size, 1000);
    assert.deepEqual([...ids].sort(), ids);
  });

  it('never sort before an earlier id, even if the clock steps back', () => {
    const a = newTaskId(T + 200_000_000);
    const b = newTaskId(T + 200_000_000 - 5000);
    assert.ok(b > a);
  });

  it('isTaskId accepts only uppercase Crockford base32 of length 26', () => {
    assert.equal(isTaskId('01ARZ3NDEKTSV4RRFFQ69G5FAV'), true);
    for (const s of [
      '',
      '01ARZ3NDEKTSV4RRFFQ69G5FA',
      '01ARZ3NDEKTSV4RRFFQ69G5FAVX',
      '01arz3ndektsv4rrffq69g5fav',
      '01ARZ3NDEKTSV4RRFFQ69G5FAI',
      '01ARZ3NDEKTSV4RRFFQ69G5FAL',
      '01ARZ3NDEKTSV4RRFFQ69G5FAO',
      '01ARZ3NDEKTSV4RRFFQ69G5FAU',
      '01ARZ3NDEKTSV4RRFFQ69G5FA-',
      ' 01ARZ3NDEKTSV4RRFFQ69G5FAV',
    ]) {
      assert.equal(isTaskId(s), false, s);
    }
    assert.equal(TASK_ID_PATTERN, '^[0-9A-HJKMNP-TV-Z]{26}$');
  });
});
