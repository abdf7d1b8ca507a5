/**
 * The `return` preference of a Prefer header (src/server/prefer.ts, RFC 7240):
 * the spellings a client may send, the preferences to ignore, and the values
 * refused with a 400 naming the header.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidInputError } from '../../src/core/errors.js';
import { PREFER_MAX_CHARS, returnPreference } from '../../src/server/prefer.js';

describe('returnPreference', () => {
  it('reads return=minimal and return=representation in the spellings RFC 7240 allows', () => {
    const cases: Array<[string | string[] | undefined, 'minimal' | 'representation' | null]> = [
      [undefined, null],
      ['', null],
      ['return=minimal', 'minimal'],
      ['return=representation', 'representation'],
      ['Return=Minimal', 'minimal'],
      ['RETURN = "minimal"', 'minimal'],
      ['  return=minimal  ', 'minimal'],
      ['respond-async, return=minimal; foo="bar", wait=10', 'minimal'],
      ['handling=lenient,return=minimal', 'minimal'],
      [['wait=5', 'return=minimal'], 'minimal'],
      // The first instance counts (RFC 7240 §2).
      ['return=minimal, return=representation', 'minimal'],
      ['return=representation, return=nonsense', 'representation'],
      // Preferences we do not support are ignored.
      ['respond-async', null],
      ['wait=10, handling=strict', null],
      ['returns=minimal', null],
      [',,,', null],
    ];
    for (const [header, want] of cases) assert.equal(returnPreference(header), want, JSON.stringify(header));
  });

  it('refuses a return of another value, an empty one, and an over-long header, naming Prefer', () => {
    const bad: Array<[string, RegExp]> = [
      ['return=full', /return must be "minimal" or "representation", got "full"/],
      ['return', /got ""/],
      ['return=', /got ""/],
      ['wait=1, return=mini', /got "mini"/],
      ['return="minimal', /got "\\"minimal"/],
      [`wait=1, ${'x'.repeat(PREFER_MAX_CHARS)}`, /at most 1024 characters/],
    ];
    for (const [header, re] of bad) {
      assert.throws(
        () => returnPreference(header),
        (e: unknown) => e instanceof InvalidInputError && e.field === 'Prefer' && re.test(e.reason),
        header.slice(0, 40),
      );
    }
  });
});
