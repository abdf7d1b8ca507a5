/**
 * proc-guard.ts: a secret flag's value masked in the process title, and the
 * long-running commands non-dumpable, so a task run as the same OS user
 * cannot read the agent's token from /proc/<pid>/cmdline or /environ.
 * The process checks run a real `drover worker` as another user (setpriv,
 * uid 65534), since root reads every process's /proc files anyway.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { guardProcFiles, loadGuardBinding, maskArgvSecrets } from '../../src/cli/proc-guard.js';
import { BIN } from '../e2e/harness.js';

const NOBODY = 65534;
const asNobody = ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'];
const notRoot = process.getuid?.() !== 0 ? 'runs processes as another user (setpriv): needs root' : false;

describe('maskArgvSecrets', () => {
  it('masks --token T and --token=T, leaves everything else as it was', () => {
    assert.deepEqual(maskArgvSecrets(['drover', 'worker', '--token', 'drv_x', '--slots', '4']), ['drover', 'worker', '--token', '***', '--slots', '4']);
    assert.deepEqual(maskArgvSecrets(['drover', '--token=drv_x', 'worker']), ['drover', '--token=***', 'worker']);
    assert.deepEqual(maskArgvSecrets(['drover', 'submit', '--', 'echo', '--tokens=1']), null);
    assert.equal(maskArgvSecrets(['drover', 'worker', '--slots', '4']), null);
  });
});

describe('the /proc guard', () => {
  it('DROVER_KEEP_DUMPABLE=1 leaves the process dumpable (said as the reason); another value is a usage error naming it', () => {
    assert.equal(guardProcFiles({ DROVER_KEEP_DUMPABLE: '1' }), 'DROVER_KEEP_DUMPABLE=1 keeps this process dumpable');
    assert.throws(() => guardProcFiles({ DROVER_KEEP_DUMPABLE: 'yes' }), /^UsageError: invalid DROVER_KEEP_DUMPABLE "yes": expected 1/);
  });

  it('the addon is built here and makes a process non-dumpable', () => {
    const r = loadGuardBinding();
    assert.ok('binding' in r, 'reason' in r ? r.reason : '');
    // In a child, so this test process stays as it was.
    const code = `import('${new URL('../../src/cli/proc-guard.js', import.meta.url).href}').then((m) => { const b = m.loadGuardBinding().binding; const before = b.dumpable(); const err = m.guardProcFiles(); process.stdout.write(JSON.stringify([before, err, b.dumpable()])); })`;
    const out = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8' });
    assert.equal(out.status, 0, out.stderr);
    assert.deepEqual(JSON.parse(out.stdout), [1, null, 0]);
  });

  describe('drover worker run by a user, and a task of that user looking at it', { skip: notRoot }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'drover-guard-'));
    chownSync(dir, NOBODY, NOBODY);
    const children: ChildProcess[] = [];
    after(() => {
      for (const c of children) c.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    });

    /** Starts `argv` as uid 65534 with `env`; resolves its pid once `ready(pid)` holds (polled: nothing to await). */
    async function startAsNobody(argv: string[], env: Record<string, string>, ready: (pid: number) => boolean): Promise<number> {
      const c = spawn(asNobody[0]!, [...asNobody.slice(1), ...argv], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, ...env }, stdio: 'ignore' });
      children.push(c);
      const pid = c.pid!; // setpriv execs the command: the same pid
      for (let i = 0; i < 200 && !ready(pid); i++) await sleep(25);
      assert.ok(ready(pid), `${argv.join(' ')} did not get ready`);
      return pid;
    }
    const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'latin1');
    /** /proc/<pid>/environ as another process of uid 65534 reads it. */
    const readEnvironAsNobody = (pid: number) => spawnSync(asNobody[0]!, [...asNobody.slice(1), 'cat', `/proc/${pid}/environ`], { encoding: 'latin1' });

    it('control: an ordinary process of that user has its environment readable by another of its processes', async () => {
      const pid = await startAsNobody(['sleep', '30'], { PLAIN_SECRET: 'visible' }, (p) => cmdline(p).startsWith('sleep'));
      const r = readEnvironAsNobody(pid);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /PLAIN_SECRET=visible/);
    });

    it('the agent: the --token value is not in its cmdline, and its environ (DROVER_TOKEN) is not readable', async () => {
      const pid = await startAsNobody(
        [process.execPath, BIN, 'worker', '--server', 'http://127.0.0.1:1', '--token', 'drv_ARGV_SECRET', '--work-dir', join(dir, 'w')],
        { DROVER_TOKEN: 'drv_ENV_SECRET' },
        (p) => cmdline(p).includes('--token ***'),
      );
      assert.doesNotMatch(cmdline(pid), /ARGV_SECRET/);
      const r = readEnvironAsNobody(pid);
      assert.notEqual(r.status, 0, 'environ was readable');
      assert.match(r.stderr, /Permission denied/);
      assert.doesNotMatch(r.stdout, /ENV_SECRET/);
    });
  });
});
