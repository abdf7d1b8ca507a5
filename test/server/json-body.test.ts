/** The JSON body parser's answers (server/json-body.ts): the reason and the place, never a piece of the body. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidInputError } from '../../src/core/errors.js';
import { parseJsonBody } from '../../src/server/json-body.js';

function refusal(text: string): string {
  try {
    parseJsonBody(text);
  } catch (err) {
    assert.ok(err instanceof InvalidInputError, String(err));
    assert.equal(err.field, 'body');
    return err.reason;
  }
  assert.fail(`accepted ${JSON.stringify(text)}`);
}

describe('parseJsonBody', () => {
  it('parses what JSON.parse parses, "constructor" and "prototype" keys on their own included', () => {
    assert.deepEqual(parseJsonBody('{"command":"true","args":["a"]}'), { command: 'true', args: ['a'] });
    assert.deepEqual(parseJsonBody(' [1, 2] '), [1, 2]);
    assert.deepEqual(parseJsonBody('{"env":{"constructor":"x","prototype":"y"}}'), { env: { constructor: 'x', prototype: 'y' } });
  });

  it('refuses prototype poisoning, naming the key', () => {
    for (const text of ['{"__proto__":{"admin":true}}', '{"env":{"__proto__":{}}}', '{"a":{"constructor":{"prototype":{"x":1}}}}']) {
      assert.equal(refusal(text), 'a "__proto__" key, or a "constructor" key holding "prototype", is not allowed', text);
    }
    // Nothing leaked onto Object.prototype by the attempt.
    assert.equal(({} as Record<string, unknown>).admin, undefined);
  });

  it('says where the text stops being JSON, in lines and columns from 1', () => {
    assert.equal(refusal('{"a":1,}'), 'not valid JSON: Expected double-quoted property name (line 1, column 8)');
    assert.equal(refusal('{"command": "true",\n\n "x": 1 2}'), "not valid JSON: Expected ',' or '}' after property value (line 3, column 9)");
    assert.equal(refusal('{"a":'), 'not valid JSON: Unexpected end of JSON input (line 1, column 6)');
    assert.equal(refusal('{"a":1} {}'), 'not valid JSON: Unexpected non-whitespace character after JSON (line 1, column 9)');
  });

  it('never quotes the body back (V8 puts a piece of it in some messages)', () => {
    const secret = 'sk_live_' + 'x'.repeat(40);
    // V8: `Unexpected token '}', ...", "x": tru}" is not valid JSON`, and `Unexpected token 's', "{"TOKEN": sk_live_xx"... is not valid JSON`.
    for (const text of [`{"env": {"TOKEN": "${secret}"}, "x": tru}`, `{"TOKEN": ${secret}}`]) {
      const reason = refusal(text);
      assert.match(reason, /^not valid JSON: Unexpected token '.'$/, text);
      assert.ok(!reason.includes('sk_live') && !reason.includes('TOKEN'), reason);
    }
  });

  it('an empty body is refused as such', () => {
    assert.equal(refusal(''), 'empty JSON body');
  });
});
