/**
 * The work-directory addon (native/work-dir.c) on real directories, and the
 * batcher that groups the agent's calls into its jobs (work-dir-native.ts):
 * what one job makes and removes, what it leaves for the recursive removal,
 * how calls share jobs, and the refusal of bad arguments.
 */
import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, readdirSync, rmdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadNativeSpawn } from '../../src/worker/native-spawn.js';
import { loadWorkDirBinding, MAKE_MAX, REMOVE_OUTPUT, REMOVE_SCRIPT, WorkDirBatcher, type WorkDirBinding } from '../../src/worker/work-dir-native.js';
import { tempDir } from './helpers.js';

const loaded = loadWorkDirBinding();

describe('work-directory addon availability', () => {
  it('loads wherever the native spawner does (both are built by npm install)', (t) => {
    if (!('binding' in loadNativeSpawn())) return t.skip('no native addons on this machine');
    assert.ok('binding' in loaded, 'reason' in loaded ? loaded.reason : '');
  });
});

if ('binding' in loaded) {
  const addon = loaded.binding;

  /** The addon, counting its jobs (the directories are real). */
  function counting(): { binding: WorkDirBinding; calls: Array<{ removals: number; count: number }> } {
    const calls: Array<{ removals: number; count: number }> = [];
    return {
      calls,
      binding: {
        batch(removals, flags, prefix, count) {
          calls.push({ removals: removals.length, count });
          return addon.batch(removals, flags, prefix, count);
        },
      },
    };
  }

  describe('drover_workdir batch()', () => {
    let tmp: ReturnType<typeof tempDir>;
    before(() => (tmp = tempDir('drover-workdir-addon-')));
    after(() => tmp.remove());

    it('makes fresh directories with `out`, owner-only, under distinct names', async () => {
      const r = await addon.batch([], [], path.join(tmp.dir, 'T-1-'), 5);
      assert.equal(r.errno, 0);
      assert.equal(r.dirs.length, 5);
      assert.equal(new Set(r.dirs).size, 5);
      for (const d of r.dirs) {
        assert.match(path.basename(d), /^T-1-[A-Za-z0-9]{6}$/);
        assert.equal(statSync(d).mode & 0o777, 0o700);
        assert.ok(statSync(path.join(d, 'out')).isDirectory());
      }
    });

    it('stops at the first failure with its errno, keeping what it made before', async () => {
      const r = await addon.batch([], [], path.join(tmp.dir, 'missing', 'T-1-'), 3);
      assert.deepEqual(r.dirs, []);
      assert.equal(r.errno, 2 /* ENOENT */);
    });

    it('removes what an attempt left nothing else in, and reports what it could not', async () => {
      const { dirs } = await addon.batch([], [], path.join(tmp.dir, 'R-1-'), 6);
      const [plain, script, output, busy, linked, gone] = dirs as [string, string, string, string, string, string];
      writeFileSync(path.join(script, '.drover-script'), 'echo hi');
      writeFileSync(path.join(output, 'drover-output.env'), 'a=1\n');
      writeFileSync(path.join(busy, 'out', 'result.csv'), 'x');
      // A task replaced `out` with a link to somewhere else: the link may go, what it points to must not.
      const target = path.join(tmp.dir, 'target');
      mkdirSync(target);
      writeFileSync(path.join(target, 'keep'), 'k');
      const outOfLinked = path.join(linked, 'out');
      rmdirSync(outOfLinked);
      symlinkSync(target, outOfLinked);
      rmSync(gone, { recursive: true });

      const r = await addon.batch([plain, script, output, busy, linked, gone], [0, REMOVE_SCRIPT, REMOVE_OUTPUT, 0, 0, 0], '', 0);
      assert.deepEqual(r.removed, [true, true, true, false, false, false]);
      assert.deepEqual(r.dirs, []);
      for (const d of [plain, script, output]) assert.equal(existsSync(d), false, d);
      assert.ok(existsSync(path.join(busy, 'out', 'result.csv')), 'a file the task left is the recursive removal’s to delete');
      assert.ok(lstatSync(outOfLinked).isSymbolicLink());
      assert.deepEqual(readdirSync(target), ['keep']);
    });

    it('a script flag without a script there: not removed (the caller removes the rest)', async () => {
      const { dirs } = await addon.batch([], [], path.join(tmp.dir, 'S-1-'), 1);
      const r = await addon.batch(dirs, [REMOVE_SCRIPT], '', 0);
      assert.deepEqual(r.removed, [false]);
      assert.ok(existsSync(dirs[0]!));
    });

    it('refuses bad arguments with a TypeError that says which, and does nothing', async () => {
      const before = readdirSync(tmp.dir).length;
      const bad: Array<[() => unknown, RegExp]> = [
        [() => addon.batch('x' as unknown as string[], [], '', 0), /removals must be an array/],
        [() => addon.batch([tmp.dir], [], '', 0), /flags an array of the same length/],
        [() => addon.batch([tmp.dir], [4], '', 0), /each flag must be a combination of 1 and 2/],
        [() => addon.batch([`${tmp.dir}\0x`], [0], '', 0), /each removal must be a non-empty path without NUL bytes/],
        [() => addon.batch([''], [0], '', 0), /each removal must be a non-empty path/],
        [() => addon.batch([], [], path.join(tmp.dir, 'a\0'), 1), /prefix must be a non-empty path without NUL bytes/],
        [() => addon.batch([], [], path.join(tmp.dir, 'a-'), MAKE_MAX + 1), /count must be an integer from 0 to 64/],
        [() => addon.batch([], [], path.join(tmp.dir, 'a-'), -1), /count must be an integer from 0 to 64/],
        [() => addon.batch(Array.from({ length: 257 }, () => tmp.dir), Array(257).fill(0), '', 0), /at most 256/],
      ];
      for (const [call, message] of bad) assert.throws(call, (err: Error) => err instanceof TypeError && message.test(err.message), String(message));
      assert.equal(readdirSync(tmp.dir).length, before);
    });
  });

  describe('WorkDirBatcher', () => {
    let tmp: ReturnType<typeof tempDir>;
    before(() => (tmp = tempDir('drover-workdir-batcher-')));
    after(() => tmp.remove());

    it('removals and spare makings asked for within one window share one job', async () => {
      const { binding, calls } = counting();
      const b = new WorkDirBatcher(binding);
      const { dirs } = await addon.batch([], [], path.join(tmp.dir, 'old-1-'), 3);
      const prefix = path.join(tmp.dir, 'attempt-0-');
      const [removed, a, c] = await Promise.all([Promise.all(dirs.map((d) => b.remove(d, 0))), b.make(prefix, 2, 'soon'), b.make(prefix, 3, 'soon')]);
      assert.deepEqual(calls, [{ removals: 3, count: 5 }]);
      assert.deepEqual(removed, [true, true, true]);
      assert.equal(a.dirs.length, 2);
      assert.equal(c.dirs.length, 3);
      assert.equal(new Set([...a.dirs, ...c.dirs]).size, 5, 'each maker gets its own directories');
      assert.deepEqual(readdirSync(tmp.dir).sort(), [...a.dirs, ...c.dirs].map((d) => path.basename(d)).sort());
    });

    it('a making for a waiting attempt goes at once and takes the queued removals with it', async () => {
      const { binding, calls } = counting();
      const b = new WorkDirBatcher(binding);
      const { dirs } = await addon.batch([], [], path.join(tmp.dir, 'old-2-'), 2);
      const removals = dirs.map((d) => b.remove(d, 0));
      const spare = b.make(path.join(tmp.dir, 'attempt-0-'), 1, 'soon');
      const mine = b.make(path.join(tmp.dir, '01TASK-1-'), 1, 'now');
      // Not a timer: the 'now' job was queued synchronously.
      assert.deepEqual(calls, [{ removals: 2, count: 1 }]);
      assert.match(path.basename((await mine).dirs[0]!), /^01TASK-1-/);
      assert.deepEqual(await Promise.all(removals), [true, true]);
      // The spare waits for the window, in a job of its own.
      assert.match(path.basename((await spare).dirs[0]!), /^attempt-0-/);
      assert.deepEqual(calls, [{ removals: 2, count: 1 }, { removals: 0, count: 1 }]);
    });

    it('makings that stop short: each waiter gets what was made for it, the rest the errno', async () => {
      const b = new WorkDirBatcher(addon);
      const prefix = path.join(tmp.dir, 'nowhere', 'attempt-0-');
      const [x, y] = await Promise.all([b.make(prefix, 1, 'soon'), b.make(prefix, 2, 'soon')]);
      assert.deepEqual(x, { dirs: [], errno: 2 });
      assert.deepEqual(y, { dirs: [], errno: 2 });
    });

    it('a job the addon refuses rejects every call it held', async () => {
      const b = new WorkDirBatcher(addon);
      const calls = [b.remove(`${tmp.dir}\0bad`, 0), b.make(path.join(tmp.dir, 'attempt-0-'), 1, 'soon')];
      for (const c of calls) await assert.rejects(c, /NUL/);
    });
  });
}
