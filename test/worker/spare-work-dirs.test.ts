/**
 * Work directories made ahead (src/worker/spare-work-dirs.ts): handed out
 * without a filesystem call when one is ready, never twice, refilled after
 * each take, removed by close(), recognised by leftovers.ts after a crash,
 * and an unmakeable parent still fails the attempt's take with the path.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { reapLeftovers } from '../../src/worker/leftovers.js';
import { SPARE_NAME, SpareWorkDirs } from '../../src/worker/spare-work-dirs.js';
import { setWorkDirBatcher, workDirBatcher } from '../../src/worker/work-dir-native.js';
import { tempDir } from './helpers.js';

/** Waits for the pool's makings under way, then checks that `n` spares are ready. */
async function ready(pool: SpareWorkDirs, n: number): Promise<void> {
  await pool.made();
  assert.equal(pool.spares, n, `${pool.spares} spares ready, expected ${n}`);
}

const calls: Array<'addon' | 'node fs'> = workDirBatcher() ? ['addon', 'node fs'] : ['node fs'];

for (const how of calls) describe(`spare work dirs (made and removed by ${how})`, () => {
  let tmp: ReturnType<typeof tempDir>;
  before(() => {
    setWorkDirBatcher(how === 'addon' ? undefined : null);
    tmp = tempDir('drover-spares-');
  });
  after(() => {
    setWorkDirBatcher(undefined);
    tmp.remove();
  });

  it('keeps `keep` ready, hands each out once, with its out dir, and refills after a take', async () => {
    const parent = path.join(tmp.dir, 'a');
    mkdirSync(parent);
    const pool = new SpareWorkDirs(parent, 3);
    pool.fill();
    await ready(pool, 3);
    const names = readdirSync(parent);
    assert.equal(names.length, 3);
    for (const n of names) assert.match(n, new RegExp(`^${SPARE_NAME}-0-[A-Za-z0-9]{6}$`));
    const got = await Promise.all(Array.from({ length: 5 }, (_, i) => pool.take('01TASK', i + 1)));
    assert.equal(new Set(got.map((w) => w.dir)).size, 5, 'a directory was handed out twice');
    for (const w of got) {
      assert.ok(statSync(w.outDir).isDirectory());
      assert.equal(w.outputFile, path.join(w.dir, 'drover-output.env'));
      assert.equal(existsSync(w.outputFile), false);
    }
    // The first three were the spares; the other two were made for their task.
    assert.equal(got.filter((w) => path.basename(w.dir).startsWith(`${SPARE_NAME}-0-`)).length, 3);
    assert.equal(got.filter((w) => path.basename(w.dir).startsWith('01TASK-')).length, 2);
    await ready(pool, 3);
    await pool.close();
    // close() removed the spares, not the directories it handed out.
    assert.deepEqual(readdirSync(parent).sort(), got.map((w) => path.basename(w.dir)).sort());
    assert.equal(pool.spares, 0);
  });

  it('makes no more spares after close(), and removes one that was being made', async () => {
    const parent = path.join(tmp.dir, 'b');
    mkdirSync(parent);
    const pool = new SpareWorkDirs(parent, 2);
    pool.fill();
    await pool.close();
    pool.fill();
    await pool.take('01T', 1);
    await pool.close();
    assert.deepEqual(readdirSync(parent).filter((n) => n.startsWith(`${SPARE_NAME}-`)), []);
  });

  it('spares a dead agent left behind are removed by the next agent (leftovers.ts)', async () => {
    const parent = path.join(tmp.dir, 'c');
    mkdirSync(parent);
    const pool = new SpareWorkDirs(parent, 2);
    pool.fill();
    await ready(pool, 2);
    // The agent dies here: nothing removes them.
    const stopped = await reapLeftovers(parent);
    assert.deepEqual(stopped, []);
    assert.deepEqual(readdirSync(parent), []);
  });

  it('a parent where nothing can be made: the take fails like a fresh make, naming the path', async () => {
    const parent = path.join(tmp.dir, 'not-a-dir');
    writeFileSync(parent, 'a file');
    const pool = new SpareWorkDirs(parent, 2);
    pool.fill();
    await assert.rejects(pool.take('01T', 1), (err: NodeJS.ErrnoException) => {
      assert.equal(err.code, 'ENOTDIR');
      assert.ok(err.message.includes(parent), err.message);
      return true;
    });
    await pool.close();
  });
});
