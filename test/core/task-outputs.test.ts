/** The DROVER_OUTPUT format (core/task-outputs.ts): every rule, every message, and the server's re-check. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OUTPUT_LIMITS, outputsFileBytes, parseTaskOutputs, taskOutputsProblem } from '../../src/core/task-outputs.js';

const parse = (text: string | Uint8Array) => parseTaskOutputs(typeof text === 'string' ? Buffer.from(text, 'utf8') : text);

function ok(text: string | Uint8Array): Record<string, string> {
  const r = parse(text);
  assert.ok(r.ok, r.ok ? '' : r.message);
  return r.outputs;
}

function refused(text: string | Uint8Array, message: string, line: number | null): void {
  const r = parse(text);
  assert.equal(r.ok, false, `accepted: ${JSON.stringify(text).slice(0, 80)}`);
  if (!r.ok) {
    assert.equal(r.message, message);
    assert.equal(r.line, line);
  }
}

describe('parseTaskOutputs', () => {
  it('reads one KEY=VALUE a line; the value is the rest of the line after the first =', () => {
    assert.deepEqual(ok('rows=42\nurl=http://x/?a=b&c=d\nempty=\n'), { rows: '42', url: 'http://x/?a=b&c=d', empty: '' });
    // The last line needs no newline.
    assert.deepEqual(ok('a=1\nb=2'), { a: '1', b: '2' });
  });

  it('keeps a value as written: spaces, tabs, quotes, # and UTF-8 text; only a trailing \\r is stripped', () => {
    assert.deepEqual(ok('msg=  two  spaces \t\nq="quoted" # not a comment\nname=日本 ✓ 🚀\n'), { msg: '  two  spaces \t', q: '"quoted" # not a comment', name: '日本 ✓ 🚀' });
    assert.deepEqual(ok('a=1\r\nb=x\ry\r\n'), { a: '1', b: 'x\ry' });
    // One \r is the line ending's; a second one is the value's.
    assert.deepEqual(ok('a=1\r\r\n'), { a: '1\r' });
  });

  it('ignores blank lines (also spaces, tabs or a lone \\r) and lines starting with #', () => {
    assert.deepEqual(ok('\n# a comment\n   \n\t\n\r\n#x=1\nk=v\n\n'), { k: 'v' });
    assert.deepEqual(ok(''), {});
    assert.deepEqual(ok('# only comments\n\n'), {});
  });

  it('accepts keys of a letter or _ then up to 63 letters, digits or _', () => {
    const long = 'K' + '9'.repeat(63);
    assert.deepEqual(ok(`_=1\na_b_2=2\nZ=3\n${long}=4\n`), { _: '1', a_b_2: '2', Z: '3', [long]: '4' });
  });

  it('keeps __proto__ and other Object.prototype names as plain keys', () => {
    const out = ok('__proto__=p\nconstructor=c\nhasOwnProperty=h\n');
    assert.deepEqual(Object.keys(out), ['__proto__', 'constructor', 'hasOwnProperty']);
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    assert.equal(JSON.stringify(out), '{"__proto__":"p","constructor":"c","hasOwnProperty":"h"}');
  });

  it('a line without = is "expected KEY=VALUE", naming the line', () => {
    refused('a=1\n\nrows 42\n', 'DROVER_OUTPUT line 3: expected KEY=VALUE', 3);
    refused('   # indented comment\n', 'DROVER_OUTPUT line 1: expected KEY=VALUE', 1);
  });

  it('an empty key, a bad character or a leading digit is an invalid key', () => {
    refused('=5\n', 'DROVER_OUTPUT line 1: empty key (expected KEY=VALUE)', 1);
    refused('a=1\n1abc=2\n', 'DROVER_OUTPUT line 2: invalid key "1abc" (a key is a letter or _, then letters, digits or _)', 2);
    refused('my-key=1\n', 'DROVER_OUTPUT line 1: invalid key "my-key" (a key is a letter or _, then letters, digits or _)', 1);
    refused('KEY =1\n', 'DROVER_OUTPUT line 1: invalid key "KEY " (a key is a letter or _, then letters, digits or _)', 1);
    refused('clé=1\n', 'DROVER_OUTPUT line 1: invalid key "clé" (a key is a letter or _, then letters, digits or _)', 1);
    // A control character in a key is shown escaped; a long key is cut.
    refused('a\x1b[2J=1\n', 'DROVER_OUTPUT line 1: invalid key "a\\u001b[2J" (a key is a letter or _, then letters, digits or _)', 1);
    refused(`${'-'.repeat(100)}=1\n`, `DROVER_OUTPUT line 1: invalid key "${'-'.repeat(40)}…" (a key is a letter or _, then letters, digits or _)`, 1);
  });

  it('a key longer than 64 characters says so', () => {
    refused(`${'K'.repeat(65)}=1\n`, `DROVER_OUTPUT line 1: key "${'K'.repeat(40)}…" is longer than 64 characters`, 1);
  });

  it('a key given twice is an error, compared ignoring case (dependents see upper-case names)', () => {
    refused('rows=1\n# c\nrows=2\n', 'DROVER_OUTPUT line 3: key "rows" given twice (first on line 1; keys are compared ignoring case)', 3);
    refused('rows=1\nROWS=2\n', 'DROVER_OUTPUT line 2: key "ROWS" given twice (first on line 1; keys are compared ignoring case)', 2);
  });

  it('a NUL anywhere on a line is an error', () => {
    refused('a=1\nb=x\u0000y\n', 'DROVER_OUTPUT line 2: contains a NUL character', 2);
    refused('\u0000\n', 'DROVER_OUTPUT line 1: contains a NUL character', 1);
  });

  it('bytes that are not UTF-8 are an error naming the line', () => {
    refused(Buffer.concat([Buffer.from('a=1\nb='), Buffer.from([0xff, 0xfe]), Buffer.from('\n')]), 'DROVER_OUTPUT line 2: not valid UTF-8', 2);
    // A truncated multi-byte character, and an encoded surrogate.
    refused(Buffer.from([0x61, 0x3d, 0xe6, 0x97]), 'DROVER_OUTPUT line 1: not valid UTF-8', 1);
    refused(Buffer.from([0x61, 0x3d, 0xed, 0xa0, 0x80]), 'DROVER_OUTPUT line 1: not valid UTF-8', 1);
  });

  it('a byte-order mark is not skipped: it makes the first key invalid', () => {
    refused('\ufeffrows=1\n', 'DROVER_OUTPUT line 1: invalid key "\ufeffrows" (a key is a letter or _, then letters, digits or _)', 1);
  });

  it(`at most ${OUTPUT_LIMITS.maxKeys} keys`, () => {
    const lines = (n: number) => Array.from({ length: n }, (_, i) => `k${i}=${i}`).join('\n');
    assert.equal(Object.keys(ok(lines(128))).length, 128);
    refused(`# header\n${lines(129)}`, 'DROVER_OUTPUT line 130: more than 128 keys', 130);
  });

  it(`at most ${OUTPUT_LIMITS.maxBytes} bytes in the file (comments and blank lines count)`, () => {
    const exact = `v=${'x'.repeat(OUTPUT_LIMITS.maxBytes - 3)}\n`;
    assert.equal(Buffer.byteLength(exact), OUTPUT_LIMITS.maxBytes);
    assert.equal(ok(exact).v!.length, OUTPUT_LIMITS.maxBytes - 3);
    refused(`#${exact}`, 'DROVER_OUTPUT: the file is larger than 65536 bytes (64 KiB)', null);
  });

  it('the first broken rule, in line order, is the one reported', () => {
    refused('a=1\nbad line\nb=\u0000\n', 'DROVER_OUTPUT line 2: expected KEY=VALUE', 2);
  });
});

describe('taskOutputsProblem (the server re-checks what a worker sends)', () => {
  it('accepts whatever parseTaskOutputs produces, up to the limits', () => {
    const samples = ['rows=42\nurl=a=b\n', 'a=1\r\r\n', '__proto__=x\n', `v=${'é'.repeat(32_000)}\n`, Array.from({ length: 128 }, (_, i) => `k${i}=`).join('\n')];
    for (const text of samples) {
      const r = parse(text);
      assert.ok(r.ok);
      assert.equal(taskOutputsProblem(r.outputs), null, text.slice(0, 40));
    }
    // Values with control characters (other than NUL and newline) are data.
    assert.equal(taskOutputsProblem({ a: '\x01\t\r\x1b[2J' }), null);
  });

  it('refuses what no file could have produced, naming the key', () => {
    assert.equal(taskOutputsProblem(null), 'expected an object of string values');
    assert.equal(taskOutputsProblem(['a']), 'expected an object of string values');
    assert.equal(taskOutputsProblem({ '1a': 'x' }), 'invalid key "1a" (a key is a letter or _, then letters, digits or _)');
    assert.equal(taskOutputsProblem({ '': 'x' }), 'empty key (expected KEY=VALUE)');
    assert.equal(taskOutputsProblem({ ['K'.repeat(65)]: 'x' }), `key "${'K'.repeat(40)}…" is longer than 64 characters`);
    assert.equal(taskOutputsProblem({ rows: '1', ROWS: '2' }), 'key "ROWS" given twice (keys are compared ignoring case)');
    assert.equal(taskOutputsProblem({ a: 7 }), 'value of "a": expected a string');
    assert.equal(taskOutputsProblem({ a: 'x\u0000' }), 'value of "a": contains a NUL character');
    assert.equal(taskOutputsProblem({ a: 'line1\nline2' }), 'value of "a": contains a newline');
    assert.equal(taskOutputsProblem({ a: 'x\ud800y' }), 'value of "a": not valid UTF-8 text (a lone surrogate)');
    assert.equal(taskOutputsProblem(Object.fromEntries(Array.from({ length: 129 }, (_, i) => [`k${i}`, '']))), 'more than 128 keys');
  });

  it('measures the size as the KEY=VALUE file would be, in UTF-8 bytes', () => {
    assert.equal(outputsFileBytes({ a: '1', b: 'é' }), 'a=1\nb=é\n'.length + 1);
    const big = { a: 'x'.repeat(40_000), b: 'y'.repeat(25_530) };
    assert.equal(outputsFileBytes(big), OUTPUT_LIMITS.maxBytes);
    assert.equal(taskOutputsProblem(big), null);
    assert.equal(taskOutputsProblem({ ...big, c: '' }), '65539 bytes as KEY=VALUE lines, over the 65536-byte limit');
  });
});
