/**
 * Fault 5: the disk under the server's data directory fills up.
 *
 * The SQLite file lives on an 8 MiB tmpfs mounted for this case (as root:
 * `mount -t tmpfs -o size=8m tmpfs DIR`; unmounted in `after`, whatever
 * happened). If the mount is refused the case is skipped and says why: no
 * other way of making ENOSPC under an unmodified server is available without
 * mount (RLIMIT_FSIZE gives EFBIG and SIGXFSZ, which is another fault).
 *
 * Steps: a few tasks run normally; four more start, then a filler file takes
 * all the free space and those four print and end (their logs and exits meet
 * the full disk); submissions with a 100 KiB script go on until the API
 * refuses them; the filler is deleted; submissions are accepted again.
 *
 * Pass criterion:
 * - while the disk is full, every API answer comes within CALL_TIMEOUT_MS (no
 *   hang), and is 201 (the write fitted in space SQLite already had) or 503
 *   with an `unavailable` error saying the disk is full, never 500; at least
 *   one 503 is seen within MAX_FULL_SUBMITS submissions;
 * - once space is freed, a submission is acknowledged again within
 *   RESUME_BOUND_MS;
 * - every acknowledged task (before, during and after) ends `succeeded`, and
 *   the four that printed while the disk was full have their whole output;
 * - the database then passes `PRAGMA integrity_check`.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startCluster, type Cluster } from '../e2e/harness.js';
import { FAULTS_SKIP, FAST_SERVER_ARGS, call, closeCluster, secs, settle, until, waitFileSh, type Reply } from './support.js';

const CALL_TIMEOUT_MS = 10_000;
const RESUME_BOUND_MS = 10_000;
const MAX_FULL_SUBMITS = 300;

function tryMount(dir: string): string | null {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m,mode=0700', 'tmpfs', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    return null;
  } catch (e) {
    return `mount -t tmpfs refused: ${String((e as { stderr?: Buffer }).stderr ?? e).trim()}`;
  }
}

function unmount(dir: string): void {
  try {
    execFileSync('umount', [dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch {
    execFileSync('umount', ['-l', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  }
}

/** Writes zeros to `file` until the filesystem refuses (ENOSPC); returns the bytes written. */
function fill(file: string): number {
  const fd = openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024);
  let total = 0;
  try {
    for (;;) {
      try {
        total += writeSync(fd, chunk);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOSPC') break;
        throw e;
      }
    }
    // Fill the last partial chunk too.
    for (let size = 32 * 1024; size >= 512; size /= 2) {
      try {
        for (;;) total += writeSync(fd, chunk.subarray(0, size));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
      }
    }
  } finally {
    closeSync(fd);
  }
  return total;
}

describe('faults: the server\'s disk is full', { skip: FAULTS_SKIP }, () => {
  let mnt: string | null = null;
  let mounted = false;
  let c: Cluster | undefined;
  after(async () => {
    await closeCluster(c);
    if (mnt) {
      if (mounted) unmount(mnt);
      rmSync(mnt, { recursive: true, force: true });
    }
  });

  it('answers 503 (disk full) instead of 500 or a hang, loses nothing acknowledged, resumes when space is freed', async (t) => {
    mnt = mkdtempSync(join(tmpdir(), 'drover-full-'));
    const refused = tryMount(mnt);
    if (refused) {
      t.skip(refused);
      return;
    }
    mounted = true;
    const dbFile = join(mnt, 'drover.db');
    c = await startCluster({ workers: 0, db: `sqlite:${dbFile}`, serverArgs: FAST_SERVER_ARGS });
    const cl = c;
    await cl.startWorker({ id: 'w1', slots: 4 });
    const acked: string[] = [];
    for (let i = 0; i < 10; i++) acked.push(await cl.api.submit({ name: `before-${i}`, command: 'true' }));
    await settle(cl.api, acked, 30_000);

    // Tasks that print and end while the disk is full: their logs and exits meet the full store.
    const marks = join(cl.dir, 'marks');
    mkdirSync(marks);
    const during: string[] = [];
    for (let i = 0; i < 4; i++) during.push(await cl.api.submit({ name: `during-${i}`, script: `echo start; ${waitFileSh(join(marks, 'full'))}; echo end; touch ${marks}/done.$DROVER_TASK_ID` }));
    acked.push(...during);
    await until('the 4 tasks to run', async () => (await Promise.all(during.map((id) => cl.api.task(id)))).every((d) => d.task.state === 'running'), 15_000);

    const filler = join(mnt, 'filler');
    const filled = fill(filler);
    t.diagnostic(`filler took ${(filled / 1024 / 1024).toFixed(2)} MiB`);
    writeFileSync(join(marks, 'full'), '');
    await until('the 4 tasks to end their processes', () => during.every((id) => existsSync(join(marks, `done.${id}`))), 15_000);

    // Big submissions until the store runs out of space it already had.
    const big = (i: number) => ({ name: `full-${i}`, script: `# ${randomBytes(50 * 1024).toString('hex')}\ntrue\n` });
    const answers: Array<{ what: string; r: Reply | null; err: string | null }> = [];
    let refusedSubmits = 0;
    for (let i = 0; i < MAX_FULL_SUBMITS && refusedSubmits < 3; i++) {
      try {
        const r = await call(cl.api, 'POST', '/v1/tasks', big(i), CALL_TIMEOUT_MS);
        answers.push({ what: `POST #${i}`, r, err: null });
        if (r.status === 201) acked.push(r.body.task.id);
        else if (r.status === 503) refusedSubmits++;
        else break;
      } catch (e) {
        answers.push({ what: `POST #${i}`, r: null, err: String(e) });
        break;
      }
    }
    // Reads on a full disk: an answer, not a hang or a 500.
    for (const path of [`/v1/tasks/${acked[0]}`, '/v1/tasks?limit=5', '/v1/workers']) {
      try {
        answers.push({ what: `GET ${path}`, r: await call(cl.api, 'GET', path, undefined, CALL_TIMEOUT_MS), err: null });
      } catch (e) {
        answers.push({ what: `GET ${path}`, r: null, err: String(e) });
      }
    }
    const counts: Record<string, number> = {};
    for (const a of answers) counts[a.r ? String(a.r.status) : 'no answer'] = (counts[a.r ? String(a.r.status) : 'no answer'] ?? 0) + 1;
    t.diagnostic(`answers while full: ${JSON.stringify(counts)}`);
    const sample = answers.find((a) => a.r?.status === 503)?.r;
    if (sample) t.diagnostic(`503 body: ${sample.text}`);

    for (const a of answers) {
      assert.ok(a.r, `${a.what}: no answer (${a.err})`);
      assert.ok([200, 201, 503].includes(a.r.status), `${a.what}: ${a.r.status} ${a.r.text.slice(0, 500)}`);
      if (a.r.status === 503) {
        assert.equal(a.r.body?.error?.code, 'unavailable', a.r.text);
        assert.match(a.r.body.error.message, /disk is full/, a.r.text);
      }
    }
    assert.ok(refusedSubmits >= 1, `no 503 within ${MAX_FULL_SUBMITS} submissions on a full disk`);

    // Free the space: service resumes.
    unlinkSync(filler);
    const freedAt = Date.now();
    const resumed = await until('a submission to be acknowledged after space was freed', async () => {
      const r = await call(cl.api, 'POST', '/v1/tasks', { name: 'after-0', command: 'true' }, CALL_TIMEOUT_MS);
      if (r.status === 201) return r.body.task.id as string;
      if (r.status !== 503) throw new Error(`${r.status} ${r.text}`);
      return null;
    }, RESUME_BOUND_MS, 100);
    t.diagnostic(`acknowledged again ${secs(Date.now() - freedAt)} after space was freed`);
    acked.push(resumed);
    for (let i = 1; i < 10; i++) acked.push(await cl.api.submit({ name: `after-${i}`, command: 'true' }));

    const done = await settle(cl.api, acked, 60_000);
    const bad = acked.filter((id) => done.get(id)?.state !== 'succeeded').map((id) => `${id}: ${done.get(id)?.state}`);
    t.diagnostic(`${acked.length} acknowledged tasks`);
    assert.deepEqual(bad, []);
    // Output printed while the disk was full is not lost either (the agent resends what was not acked).
    for (const id of during) assert.equal((await cl.api.waitDone(id)).logs, 'start\nend\n', `log of ${id}`);

    await cl.server.stop('SIGTERM');
    const db = new Database(dbFile, { fileMustExist: true });
    try {
      assert.deepEqual((db.pragma('integrity_check') as Array<{ integrity_check: string }>).map((r) => r.integrity_check), ['ok']);
    } finally {
      db.close();
    }
  });
});
