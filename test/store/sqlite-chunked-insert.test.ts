/**
 * sqlite/chunked-insert.ts: the statement sizes a batch is split into, and the
 * rows a chunked insert stores (on a real in-memory SQLite database).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CHUNK_ROWS, chunkSizes, insertChunked, valuesInsert } from '../../src/store/sqlite/chunked-insert.js';
import { openSqliteDb } from '../../src/store/sqlite/db.js';

describe('sqlite chunked insert', () => {
  it('splits n rows into 128-row statements, then the binary digits of the rest', () => {
    assert.deepEqual(chunkSizes(0), []);
    assert.deepEqual(chunkSizes(1), [1]);
    assert.deepEqual(chunkSizes(127), [64, 32, 16, 8, 4, 2, 1]);
    assert.deepEqual(chunkSizes(128), [128]);
    assert.deepEqual(chunkSizes(1000), [128, 128, 128, 128, 128, 128, 128, 64, 32, 8]);
    for (let n = 0; n <= 1000; n++) {
      const sizes = chunkSizes(n);
      assert.equal(sizes.reduce((a, b) => a + b, 0), n);
      assert.ok(sizes.every((k) => k <= CHUNK_ROWS));
    }
    // At most eight statement texts whatever the sizes.
    assert.equal(new Set(Array.from({ length: 1001 }, (_, n) => chunkSizes(n)).flat()).size, 8);
  });

  it('stores every row in order with the shared named values, in the sizes of chunkSizes', async () => {
    const d = openSqliteDb(':memory:');
    try {
      d.db.exec('CREATE TABLE t (n INTEGER, label TEXT, at INTEGER)');
      const texts: number[] = [];
      const head = valuesInsert('INSERT INTO t (n, label, at)', '(?, ?, @at)');
      const sqlFor = (k: number) => (texts.push(k), head(k));
      const values = Array.from({ length: 300 }, (_, i) => [i, `row-${i}`]).flat();
      await d.write(() => insertChunked(d, sqlFor, 2, values, { at: 7 }));
      const rows = d.db.prepare('SELECT n, label, at FROM t ORDER BY rowid').all() as Array<{ n: number; label: string; at: number }>;
      assert.deepEqual(rows, Array.from({ length: 300 }, (_, i) => ({ n: i, label: `row-${i}`, at: 7 })));
      assert.deepEqual(texts, [128, 128, 32, 8, 4]);
    } finally {
      await d.close();
    }
  });

  it('refuses values that are not whole rows and stores nothing', async () => {
    const d = openSqliteDb(':memory:');
    try {
      d.db.exec('CREATE TABLE t (a, b)');
      await assert.rejects(
        d.write(() => insertChunked(d, valuesInsert('INSERT INTO t (a, b)', '(?, ?)'), 2, [1, 2, 3], {})),
        /3 values are not whole rows of 2/,
      );
      assert.deepEqual(d.db.prepare('SELECT count(*) AS n FROM t').get(), { n: 0 });
    } finally {
      await d.close();
    }
  });
});
