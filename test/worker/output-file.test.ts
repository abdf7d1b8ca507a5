/**
 * The agent's read of a DROVER_OUTPUT file (output-file.ts) on both of its
 * paths: a work dir on disk (libuv's threadpool) and one in memory (tmpfs,
 * synchronous calls), with the work dirs made and removed by the addon
 * (work-dir-native.ts) and by Node's fs. Real files, links and FIFOs.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statfsSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readOutputFile } from '../../src/worker/output-file.js';
import { createWorkDir, removeWorkDir } from '../../src/worker/work-dir.js';
import { setWorkDirBatcher, workDirBatcher } from '../../src/worker/work-dir-native.js';

const TMPFS_MAGIC = 0x01021994;
const places: Array<[string, string]> = [['disk', tmpdir()]];
if (existsSync('/dev/shm') && statfsSync('/dev/shm').type === TMPFS_MAGIC) places.push(['tmpfs', '/dev/shm']);

const calls: Array<'addon' | 'node fs'> = workDirBatcher() ? ['addon', 'node fs'] : ['node fs'];

for (const [kind, base] of places) for (const how of calls) describe(`readOutputFile (work dir on ${kind}, made and removed by ${how})`, () => {
  const parent = mkdtempSync(path.join(base, 'drover-output-file-'));
  before(() => setWorkDirBatcher(how === 'addon' ? undefined : null));
  after(() => {
    setWorkDirBatcher(undefined);
    rmSync(parent, { recursive: true, force: true });
  });
  const fresh = () => createWorkDir(parent, 'T', 1);

  it('no file: none, and the work dir is removed by the fast path', async () => {
    const wd = await fresh();
    assert.deepEqual(await readOutputFile(wd), { kind: 'none' });
    assert.equal(wd.outputFileSeen, undefined);
    await removeWorkDir(wd);
    assert.equal(existsSync(wd.dir), false);
  });

  it('a file: its outputs, and the work dir is still removed completely', async () => {
    const wd = await fresh();
    writeFileSync(wd.outputFile, 'rows=42\n# c\nname=日本\n');
    assert.deepEqual(await readOutputFile(wd), { kind: 'outputs', outputs: { rows: '42', name: '日本' } });
    assert.equal(wd.outputFileSeen, true);
    await removeWorkDir(wd);
    assert.equal(existsSync(wd.dir), false);
  });

  it('a file without a key is none', async () => {
    const wd = await fresh();
    writeFileSync(wd.outputFile, '# only a comment\n');
    assert.deepEqual(await readOutputFile(wd), { kind: 'none' });
    await removeWorkDir(wd);
  });

  it('errors name DROVER_OUTPUT: a bad line, a link, a FIFO, a directory, a large file, an unreadable one', async () => {
    const cases: Array<[(file: string) => void, string]> = [
      [(f) => writeFileSync(f, 'ok=1\nnope\n'), 'DROVER_OUTPUT line 2: expected KEY=VALUE'],
      [(f) => symlinkSync('/etc/passwd', f), 'DROVER_OUTPUT: is a symbolic link (not followed: write a regular file)'],
      [(f) => execFileSync('mkfifo', [f]), 'DROVER_OUTPUT: not a regular file'],
      [(f) => mkdirSync(f), 'DROVER_OUTPUT: not a regular file'],
      [(f) => (writeFileSync(f, ''), truncateSync(f, 65_537)), 'DROVER_OUTPUT: the file is larger than 65536 bytes (64 KiB)'],
    ];
    // Root reads a mode-000 file anyway: that case only means something for another user.
    if (process.getuid?.() !== 0) cases.push([(f) => writeFileSync(f, 'a=1\n', { mode: 0 }), 'DROVER_OUTPUT: could not open the file (EACCES)']);
    for (const [make, message] of cases) {
      const wd = await fresh();
      make(wd.outputFile);
      assert.deepEqual(await readOutputFile(wd), { kind: 'error', message });
      await removeWorkDir(wd);
      assert.equal(existsSync(wd.dir), false, message);
    }
  });
});
