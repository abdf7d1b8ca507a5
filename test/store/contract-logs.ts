/** Store contract, logs: fenced appends, idempotent re-sends, reading with a cursor. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newTaskId } from '../../src/core/ids.js';
import { chunk, Harness, T0, type Opened } from './contract-harness.js';

export function runLogContract(name: string, open: Opened): void {
  describe(`Store contract, logs: ${name}`, () => {
    const h = Harness.use(open);

    it('appends and reads chunks in order with an afterId cursor and a limit', async () => {
      const t = await h.submit();
      const c = await h.claim();
      assert.equal(await h.log(c, [chunk(0, 'one\n'), chunk(1, 'two\n', 'stderr')], T0 + 1), true);
      const binary = Buffer.from([0, 255, 1, 254, 0x80, 0x0a]);
      assert.equal(await h.log(c, [chunk(2, 'three\n'), { seq: 3, stream: 'stdout', data: binary }], T0 + 2), true);
      assert.equal(await h.log(c, [], T0 + 2), true);

      const all = await h.store.readLogs(t.id, 0, 100);
      assert.deepEqual(
        all.map((l) => [l.attempt, l.seq, l.stream, l.at]),
        [
          [1, 0, 'stdout', T0 + 1],
          [1, 1, 'stderr', T0 + 1],
          [1, 2, 'stdout', T0 + 2],
          [1, 3, 'stdout', T0 + 2],
        ],
      );
      assert.equal(Buffer.concat(all.slice(0, 3).map((l) => l.data)).toString(), 'one\ntwo\nthree\n');
      assert.ok(Buffer.isBuffer(all[3]!.data));
      assert.deepEqual(Buffer.from(all[3]!.data), binary);
      for (let i = 1; i < all.length; i++) assert.ok(all[i]!.id > all[i - 1]!.id);

      assert.deepEqual(
        (await h.store.readLogs(t.id, all[1]!.id, 100)).map((l) => l.seq),
        [2, 3],
      );
      assert.deepEqual(
        (await h.store.readLogs(t.id, all[0]!.id, 2)).map((l) => l.seq),
        [1, 2],
      );
      assert.deepEqual(await h.store.readLogs(t.id, all[3]!.id, 100), []);
      assert.deepEqual(await h.store.readLogs(newTaskId(T0), 0, 100), []);
    });

    it('a re-sent chunk (same attempt and seq) is stored once', async () => {
      const t = await h.submit();
      const c = await h.claim();
      await h.log(c, [chunk(0, 'a'), chunk(1, 'b')], T0 + 1);
      assert.equal(await h.log(c, [chunk(1, 'b'), chunk(2, 'c')], T0 + 2), true);
      assert.equal(Buffer.concat((await h.store.readLogs(t.id, 0, 100)).map((l) => l.data)).toString(), 'abc');
    });

    it('keeps attempts apart: one log across attempts, filterable by attempt', async () => {
      const t = await h.submit();
      const c1 = await h.claim(T0);
      await h.log(c1, [chunk(0, 'a1-0'), chunk(1, 'a1-1')], T0 + 1);
      await h.end(c1, 'failed', T0 + 2);
      await h.store.promoteDue(T0 + 5000, 100);
      const c2 = await h.claim(T0 + 5001);
      await h.log(c2, [chunk(0, 'a2-0'), chunk(1, 'a2-1', 'stderr')], T0 + 5002);

      const text = (ls: { data: Buffer }[]) => ls.map((l) => l.data.toString());
      assert.deepEqual(text(await h.store.readLogs(t.id, 0, 100)), ['a1-0', 'a1-1', 'a2-0', 'a2-1']);
      const second = await h.store.readLogs(t.id, 0, 100, 2);
      assert.deepEqual(text(second), ['a2-0', 'a2-1']);
      assert.ok(second.every((l) => l.attempt === 2));
      assert.deepEqual(text(await h.store.readLogs(t.id, 0, 100, 1)), ['a1-0', 'a1-1']);
      assert.deepEqual(text(await h.store.readLogs(t.id, second[0]!.id, 100, 2)), ['a2-1']);
      assert.deepEqual(await h.store.readLogs(t.id, 0, 100, 3), []);
    });

    it('readLogsBefore pages backwards from the end, each page ascending', async () => {
      const t = await h.submit();
      const c1 = await h.claim(T0);
      await h.log(c1, [chunk(0, 'a0'), chunk(1, 'a1')], T0 + 1);
      await h.end(c1, 'failed', T0 + 2);
      await h.store.promoteDue(T0 + 5000, 100);
      const c2 = await h.claim(T0 + 5001);
      await h.log(c2, [chunk(0, 'b0'), chunk(1, 'b1', 'stderr'), chunk(2, 'b2')], T0 + 5002);
      const other = await h.submit({ now: T0 + 5003 });
      const c3 = await h.claim(T0 + 5004);
      assert.equal(c3.task.id, other.id);
      await h.log(c3, [chunk(0, 'other')], T0 + 5005);

      const text = (ls: { data: Buffer }[]) => ls.map((l) => l.data.toString());
      // The end of the log (null), across attempts, only this task's chunks.
      const last = await h.store.readLogsBefore(t.id, null, 2);
      assert.deepEqual(text(last), ['b1', 'b2']);
      assert.deepEqual(
        last.map((l) => [l.attempt, l.seq, l.stream]),
        [
          [2, 1, 'stderr'],
          [2, 2, 'stdout'],
        ],
      );
      const prev = await h.store.readLogsBefore(t.id, last[0]!.id, 2);
      assert.deepEqual(text(prev), ['a1', 'b0']);
      assert.deepEqual(text(await h.store.readLogsBefore(t.id, prev[0]!.id, 2)), ['a0']);
      const first = (await h.store.readLogs(t.id, 0, 1))[0]!;
      assert.deepEqual(await h.store.readLogsBefore(t.id, first.id, 2), [], 'nothing before the first chunk');
      assert.deepEqual(text(await h.store.readLogsBefore(t.id, null, 100)), ['a0', 'a1', 'b0', 'b1', 'b2']);
      // The same chunks readLogs returns, fields and all.
      assert.deepEqual(await h.store.readLogsBefore(t.id, null, 100), await h.store.readLogs(t.id, 0, 100));
      assert.deepEqual(await h.store.readLogsBefore(newTaskId(T0), null, 10), []);
    });

    it('a cancelled task’s attempt still stores its output until it ends', async () => {
      const t = await h.submit();
      const c = await h.claim();
      await h.store.cancelTask(t.id, 'user:alice', T0 + 1);
      assert.equal(await h.log(c, [chunk(0, 'terminating')], T0 + 2), true);
      await h.end(c, 'cancelled', T0 + 3);
      assert.equal(await h.log(c, [chunk(1, 'after')], T0 + 4), false);
      assert.deepEqual((await h.store.readLogs(t.id, 0, 100)).map((l) => l.data.toString()), ['terminating']);
    });
  });
}
