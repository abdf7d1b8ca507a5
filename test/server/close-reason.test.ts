/** A close reason always fits a WebSocket close frame (123 bytes), cut on a character boundary. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { closeReason, MAX_CLOSE_REASON_BYTES } from '../../src/server/close-reason.js';

describe('closeReason', () => {
  it('keeps a short reason as it is', () => {
    assert.equal(closeReason('protocol error: exit.outcome: must be equal to one of the allowed values'), 'protocol error: exit.outcome: must be equal to one of the allowed values');
    assert.equal(closeReason('x'.repeat(123)), 'x'.repeat(123));
  });

  it('cuts to 123 bytes of UTF-8, never inside a character', () => {
    const cases = ['x'.repeat(500), `protocol error: exit.outputs: must NOT have additional properties (${'é'.repeat(40)})`, 'ab' + '日'.repeat(100), 'a' + '🚀'.repeat(60), '🚀'.repeat(60)];
    for (const reason of cases) {
      const out = closeReason(reason);
      assert.ok(Buffer.byteLength(out) <= MAX_CLOSE_REASON_BYTES, `${Buffer.byteLength(out)} bytes`);
      assert.ok(reason.startsWith(out));
      assert.doesNotMatch(out, /\p{Cs}/u, 'no half of a surrogate pair');
      // As long as it can be: one more character would not fit.
      assert.ok(Buffer.byteLength(reason.slice(0, out.length + (reason.codePointAt(out.length)! > 0xffff ? 2 : 1))) > MAX_CLOSE_REASON_BYTES);
    }
  });
});
