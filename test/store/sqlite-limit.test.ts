/**
 * The SQLite store writes LIMIT's parameter as `+?` (sqlite/records.ts
 * sqliteLimit: a bare `LIMIT ?` is compiled again on every call). Checked
 * three ways: every statement the store prepares while a workload runs
 * through it (claims, lists of every shape, feed, logs, schedules, DAG runs),
 * the store's source, and that `LIMIT +?` still limits and still refuses
 * what a bare parameter refuses.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { newTaskId } from '../../src/core/ids.js';
import { sqliteLimit } from '../../src/store/sqlite/records.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { makeSpec } from './contract-harness.js';

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3') as typeof import('better-sqlite3');

/** A LIMIT or OFFSET (upper case, as this code writes SQL) whose value is a bare parameter (`?`, `?1`, `@x`, `:x`, `$x`, or one in parentheses). */
const BARE_LIMIT = /\b(LIMIT|OFFSET)\s+\(?\s*(\?\d*|[@:$]\w+)(?!\w|\s*[-+*/|])/;

describe('SQLite LIMIT parameters', () => {
  const prepared: string[] = [];
  const proto = Database.prototype as unknown as { prepare: (sql: string) => unknown };
  const original = proto.prepare;
  let store: SqliteStore;

  before(async () => {
    proto.prepare = function (this: unknown, sql: string) {
      prepared.push(sql);
      return original.call(this, sql);
    };
    store = openSqliteStore(':memory:');
    await store.migrate();
  });
  after(async () => {
    proto.prepare = original;
    await store.close();
  });

  it('the pattern tells bare parameters from expressions', () => {
    for (const bare of ['LIMIT ?', 'LIMIT @max', 'LIMIT (?)', 'LIMIT ?3', 'OFFSET :n', 'LIMIT $1 ']) assert.match(bare, BARE_LIMIT, bare);
    for (const ok of ['LIMIT +?', 'LIMIT +@max', 'LIMIT 1', 'OFFSET @n - 1', 'LIMIT 1 OFFSET @n - 1']) assert.doesNotMatch(ok, BARE_LIMIT, ok);
  });

  it('no statement the store prepares under a workload has one', async () => {
    const now = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const id = newTaskId(now + i);
      ids.push(id);
      await store.createTask(id, `owner${i % 2}`, makeSpec({ name: `job-${i}` }), 'user:test', now + i);
    }
    const claims = await store.claimMany({ id: 'w1', labels: {} }, 2, now + 10, 60_000);
    assert.equal(claims.length, 2, 'the claim still takes its limit');
    await store.listTasks({ limit: 2 });
    await store.listTasks({ limit: 2, owner: 'owner0', state: 'waiting' });
    await store.listTasks({ limit: 2, namePrefix: 'job' });
    await store.listTaskSummaries({ limit: 2, namePrefix: 'job' });
    await store.listTaskSummaries({ limit: 3 });
    await store.readChanges('0', 3);
    await store.readChanges('0', 3, 'owner1');
    await store.pruneFeed(0, 10);
    await store.readLogs(ids[0]!, 0, 10);
    await store.readLogs(ids[0]!, 0, 10, 1);
    await store.readLogsBefore(ids[0]!, null, 10);
    await store.listSchedules({ limit: 2 });
    await store.listSchedules({ limit: 2, owner: 'owner0' });
    await store.dueSchedules(now, 10);
    await store.pruneScheduleRuns(10, 10);
    await store.scheduleRuns('01NOSUCHSCHEDULE', 5);
    await store.activeScheduleRuns(['01NOSUCHSCHEDULE'], 5);
    await store.listDagRuns({ limit: 2 });
    await store.listDags({ limit: 2 });
    await store.expiredAttempts(now + 120_000, 10);
    await store.promoteDue(now, 10);
    const bare = prepared.filter((sql) => BARE_LIMIT.test(sql));
    assert.ok(prepared.some((sql) => /LIMIT \+/.test(sql)), 'the workload prepared LIMITed statements');
    assert.deepEqual(bare, [], `statements with a bare LIMIT parameter:\n${bare.join('\n---\n')}`);
  });

  it('the store source has none', () => {
    const dir = fileURLToPath(new URL('../../src/store/sqlite/', import.meta.url));
    const found = readdirSync(dir)
      .filter((f) => f.endsWith('.js'))
      .flatMap((f) => readFileSync(dir + f, 'utf8').split('\n').map((line, i) => ({ where: `${f}:${i + 1}`, line })))
      .filter(({ line }) => !/^\s*(\*|\/\/|\/\*)/.test(line) && BARE_LIMIT.test(line));
    assert.deepEqual(found, []);
  });

  it('LIMIT +? limits, and refuses a value a bare LIMIT ? refuses', () => {
    const db = new Database(':memory:');
    try {
      db.exec('CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3), (4)');
      const limited = db.prepare(`SELECT x FROM t ORDER BY x LIMIT ${sqliteLimit('?')}`);
      assert.deepEqual(limited.all(2), [{ x: 1 }, { x: 2 }]);
      assert.deepEqual(limited.all(3), [{ x: 1 }, { x: 2 }, { x: 3 }], 'a new value is taken at the next run');
      const plain = db.prepare('SELECT x FROM t ORDER BY x LIMIT ?');
      for (const v of ['two', 1.5]) {
        assert.throws(() => plain.all(v), /datatype mismatch/);
        assert.throws(() => limited.all(v), /datatype mismatch/);
      }
    } finally {
      db.close();
    }
  });
});
