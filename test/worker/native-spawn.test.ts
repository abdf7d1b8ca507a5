/**
 * The two spawners (native-spawn.ts): the native addon and Node's
 * child_process fallback give a child the same things, checked from inside
 * the child (exit code, signal, spawn errors, PATH from the task's env, cwd,
 * env, session and process group, fds, signal dispositions and mask, pipes),
 * and the selection falls back when the addon is unavailable.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, closeSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { chooseSpawner, loadNativeSpawn, nativeLive, pickSpawner, type NativeBinding, type NativeStarts, type SpawnedProcess, type SpawnRequest } from '../../src/worker/native-spawn.js';
import { spawnWithNode } from '../../src/worker/native-spawn-fallback.js';
import { runningMembers, SPAWNERS, tempDir } from './helpers.js';

const BASE_ENV = { PATH: '/usr/bin:/bin' };

interface Ran {
  error?: string;
  /** The errno name of a failed start: the same from both spawners. */
  errno?: string | null;
  pid?: number;
  stdout?: string;
  stderr?: string;
  code?: number | null;
  signal?: NodeJS.Signals | null;
}

/** The group's running members once none is left, or after 5 s (no event tells when a killed member is gone). */
async function runningMembersAfter(pgid: number): Promise<number[]> {
  const deadline = Date.now() + 5_000;
  while (runningMembers(pgid).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  return runningMembers(pgid);
}

async function readAll(s: Readable): Promise<string> {
  const parts: Buffer[] = [];
  s.on('data', (d: Buffer) => parts.push(d));
  await once(s, 'close');
  return Buffer.concat(parts).toString();
}

describe('native spawner availability', () => {
  it('is built and loads on this machine (Linux with a C compiler): else every native test below is skipped', (t) => {
    const n = loadNativeSpawn();
    if (!('binding' in n)) t.skip(n.reason);
    else assert.equal(typeof n.binding.spawn, 'function');
  });
});

/**
 * Each spawner, and the native one both ways (native-spawn.ts NativeStarts): 'idle' starts inline
 * (on this thread) whenever nothing of it runs, which is most tests below (one process at a time);
 * 'threads' always on the addon's spawner threads.
 */
type Variant = { kind: 'native' | 'node'; starts: NativeStarts; label: string };
const VARIANTS: Variant[] = SPAWNERS.flatMap((kind): Variant[] =>
  kind === 'native'
    ? [
        { kind, starts: 'idle', label: 'native (inline when idle)' },
        { kind, starts: 'threads', label: 'native (spawner threads)' },
      ]
    : [{ kind, starts: 'idle', label: kind }],
);

for (const { kind, starts, label } of VARIANTS) {
  describe(`spawner: ${label}`, { timeout: 30_000 }, () => {
    const spawner = pickSpawner(kind, undefined, starts);
    let tmp: ReturnType<typeof tempDir>;
    before(() => (tmp = tempDir('drover-spawn-')));
    after(() => tmp.remove());

    /** Runs to the end; the child's stdout, stderr and how it ended (or the spawn error). */
    async function run(req: Partial<SpawnRequest> & { file: string }): Promise<Ran> {
      const p = await spawner({ args: [], cwd: tmp.dir, env: BASE_ENV, ...req });
      if ('error' in p) return { error: p.error, errno: p.code };
      const [stdout, stderr, exit] = await Promise.all([readAll(p.stdout), readAll(p.stderr), p.exited]);
      // groupGone has tests of its own below.
      return { pid: p.pid, stdout, stderr, code: exit.code, signal: exit.signal };
    }
    const sh = (script: string, over: Partial<SpawnRequest> = {}) => run({ file: 'sh', args: ['-c', script], ...over });

    it('reports the exit code, and both pipes carry their stream', async () => {
      const r = await sh('echo out; echo err >&2; exit 7');
      assert.deepEqual({ ...r, pid: 0 }, { pid: 0, stdout: 'out\n', stderr: 'err\n', code: 7, signal: null });
    });

    it('reports the signal that ended the process', async () => {
      const r = await sh('kill -USR1 $$');
      assert.equal(r.code, null);
      assert.equal(r.signal, 'SIGUSR1');
    });

    it('carries large output intact (2 MB on stdout while 1 MB goes to stderr)', async () => {
      const r = await sh('head -c 2000000 /dev/zero | tr "\\0" a; head -c 1000000 /dev/zero | tr "\\0" b >&2');
      assert.equal(r.code, 0);
      assert.equal(r.stdout!.length, 2_000_000);
      assert.ok(/^a+$/.test(r.stdout!));
      assert.equal(r.stderr!.length, 1_000_000);
    });

    it('ENOENT: a command found nowhere on the PATH', async () => {
      assert.deepEqual(await run({ file: 'drover-no-such-command' }), { error: 'spawn drover-no-such-command ENOENT', errno: 'ENOENT' });
    });

    it('EACCES: a file that is not executable, by path and on the PATH', async () => {
      const dir = path.join(tmp.dir, 'noexec');
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'drover-noexec'), '#!/bin/sh\necho hi\n', { mode: 0o644 });
      chmodSync(path.join(dir, 'drover-noexec'), 0o644);
      const file = path.join(dir, 'drover-noexec');
      // (root too: execve needs an x bit even for root.)
      assert.deepEqual(await run({ file }), { error: `spawn ${file} EACCES`, errno: 'EACCES' });
      assert.deepEqual(await run({ file: 'drover-noexec', env: { PATH: dir } }), { error: 'spawn drover-noexec EACCES', errno: 'EACCES' });
    });

    it('ENOTDIR: a path through a regular file', async () => {
      assert.deepEqual(await run({ file: '/etc/passwd/x' }), { error: 'spawn /etc/passwd/x ENOTDIR', errno: 'ENOTDIR' });
    });

    it('E2BIG: an argument longer than the kernel takes (128 KiB)', async () => {
      assert.deepEqual(await run({ file: '/bin/true', args: ['x'.repeat(200_000)] }), { error: 'spawn /bin/true E2BIG', errno: 'E2BIG' });
    });

    it('looks the command up in the PATH of the task env, not the agent\'s', async () => {
      const bin = path.join(tmp.dir, 'bin');
      mkdirSync(bin, { recursive: true });
      writeFileSync(path.join(bin, 'drover-probe-cmd'), '#!/bin/sh\necho found "$@"\n', { mode: 0o755 });
      chmodSync(path.join(bin, 'drover-probe-cmd'), 0o755);
      const r = await run({ file: 'drover-probe-cmd', args: ['x'], env: { PATH: `/nonexistent:${bin}` } });
      assert.equal(r.stdout, 'found x\n');
      // The agent's PATH has sh; the task's does not.
      assert.deepEqual(await run({ file: 'sh', env: { PATH: '/nonexistent' } }), { error: 'spawn sh ENOENT', errno: 'ENOENT' });
    });

    it('runs in the given cwd with exactly the given environment', async () => {
      const r = await run({ file: '/usr/bin/env', env: { ONLY: 'this one', PATH: '/bin' } });
      assert.deepEqual(r.stdout!.trim().split('\n').sort(), ['ONLY=this one', 'PATH=/bin']);
      assert.equal((await sh('pwd')).stdout, `${tmp.dir}\n`);
    });

    it('is the leader of a new session and process group; stdin is /dev/null', async () => {
      // /proc/self/stat fields after the name: state ppid pgrp session
      const r = await sh('cut -d")" -f2 /proc/$$/stat | cut -d" " -f4,5; readlink /proc/$$/fd/0');
      assert.deepEqual(r.stdout!.trim().split('\n'), [`${r.pid} ${r.pid}`, '/dev/null']);
    });

    it('inherits no fd of the agent but 0, 1 and 2', async () => {
      const mine = openSync(path.join(tmp.dir, 'held-open'), 'w');
      try {
        const r = await run({ file: '/bin/ls', args: ['-1', '/proc/self/fd'] });
        const fds = r.stdout!.trim().split('\n');
        assert.ok(!fds.includes(String(mine)), `fd ${mine} leaked`);
        // ls's own fd 3 is the directory it is listing. The addon closes every other fd; libuv only the ones
        // opened O_CLOEXEC, which is all of the agent's own but not one its parent leaked to it without the flag.
        if (kind === 'native') assert.deepEqual(fds, ['0', '1', '2', '3']);
      } finally {
        closeSync(mine);
      }
    });

    it('starts with every signal at its default action and an empty mask (the agent ignores SIGPIPE; the child must not)', async () => {
      // grep itself, not a shell reading its own status: dash blocks signals around its forks.
      const r = await run({ file: 'grep', args: ['-E', '^(SigIgn|SigBlk)', '/proc/self/status'] });
      assert.deepEqual(r.stdout!.trim().split('\n').map((l) => l.replace(/\s+/g, ' ')), ['SigBlk: 0000000000000000', 'SigIgn: 0000000000000000']);
    });

    it('a signal to the group reaches every member', async () => {
      const p = await spawner({ file: 'sh', args: ['-c', 'sleep 100 & echo $!; wait'], cwd: tmp.dir, env: BASE_ENV });
      assert.ok(!('error' in p));
      const s = p as SpawnedProcess;
      let out = '';
      s.stdout.on('data', (d: Buffer) => (out += d.toString()));
      s.stderr.resume();
      const closed = once(s.stdout, 'close');
      while (!out.includes('\n')) await new Promise((r) => setTimeout(r, 5));
      const child = Number(out.trim());
      process.kill(-s.pid, 'SIGKILL');
      // groupGone depends on whether init reaped the orphan before the leader's reap: either way here.
      const e = await s.exited;
      assert.deepEqual({ code: e.code, signal: e.signal }, { code: null, signal: 'SIGKILL' });
      await closed;
      // The orphaned sleep is a zombie until init reaps it: look at running members. Closing the pipe is the
      // last thing it did that we can await; it becomes a zombie a moment later (no event tells when).
      assert.deepEqual(await runningMembersAfter(s.pid), []);
      assert.ok(child > 0);
    });

    it(kind === 'native' ? 'says at the reap whether the group is gone: yes for a lone process, not while a member is left' : 'never says the group is gone (it cannot know)', async () => {
      const lone = await spawner({ file: 'sh', args: ['-c', 'exit 0'], cwd: tmp.dir, env: BASE_ENV });
      assert.ok(!('error' in lone));
      lone.stdout.resume();
      lone.stderr.resume();
      assert.equal((await lone.exited).groupGone, kind === 'native' ? true : undefined);

      // The sleep stays in the group (and holds the pipes): not gone, whichever spawner.
      const left = await spawner({ file: 'sh', args: ['-c', 'sleep 100 & exit 0'], cwd: tmp.dir, env: BASE_ENV });
      assert.ok(!('error' in left));
      left.stdout.resume();
      left.stderr.resume();
      const e = await left.exited;
      assert.deepEqual(e, { code: 0, signal: null });
      assert.ok(runningMembers(left.pid).length > 0);
      process.kill(-left.pid, 'SIGKILL');
      assert.deepEqual(await runningMembersAfter(left.pid), []);
    });

    it('exits are reported while Node\'s own child_process children run and exit too', async () => {
      const node = spawn('sh', ['-c', 'exit 3'], { stdio: 'ignore' });
      const nodeExit = once(node, 'exit');
      const many = await Promise.all(Array.from({ length: 20 }, (_, i) => sh(`exit ${i}`)));
      assert.deepEqual(many.map((r) => r.code), Array.from({ length: 20 }, (_, i) => i));
      assert.deepEqual(await nodeExit, [3, null]);
    });

    it('a NUL byte in an argument is an error naming the command, and starts nothing', async () => {
      const r = await run({ file: 'echo', args: ['a\0b'] });
      assert.match(r.error ?? '', kind === 'native' ? /^spawn echo: argument 1 holds a NUL byte$/ : /null bytes/);
    });
  });
}

describe('native spawner: where a start runs', { timeout: 30_000, skip: 'binding' in loadNativeSpawn() ? false : 'the addon is not built here' }, () => {
  let tmp: ReturnType<typeof tempDir>;
  before(() => (tmp = tempDir('drover-spawn-where-')));
  after(() => tmp.remove());
  const real = () => (loadNativeSpawn() as { binding: NativeBinding }).binding;

  /** binding.spawn of `argv`; whether onSpawn came before spawn returned, its arguments, and the exit. */
  async function direct(argv: string[], inline: unknown) {
    let returned = false;
    let spawnedBeforeReturn: boolean | null = null;
    let onSpawnArgs: number[] = [];
    let exit!: (v: [number, number]) => void;
    const exited = new Promise<[number, number]>((r) => (exit = r));
    const started = new Promise<void>((resolve) => {
      (real().spawn as (...a: unknown[]) => void)(
        argv[0],
        argv,
        ['PATH=/usr/bin:/bin'],
        tmp.dir,
        (errno: number, pid: number, out: number, err: number) => {
          spawnedBeforeReturn = !returned;
          onSpawnArgs = [errno, pid, out, err];
          if (out >= 0) closeSync(out);
          if (err >= 0) closeSync(err);
          resolve();
        },
        (code: number, signal: number) => exit([code, signal]),
        inline,
      );
      returned = true;
    });
    await started;
    return { spawnedBeforeReturn, onSpawnArgs, exited };
  }

  it('inline: onSpawn is called before spawn returns, and the exit is reported from the loop as usual', async () => {
    const r = await direct(['sh', '-c', 'exit 4'], true);
    assert.equal(r.spawnedBeforeReturn, true);
    assert.equal(r.onSpawnArgs[0], 0);
    assert.ok(r.onSpawnArgs[1]! > 0);
    assert.deepEqual(await r.exited, [4, 0]);
  });

  it('not inline (false or left out): onSpawn comes from the event loop, after spawn returned', async () => {
    for (const inline of [false, undefined]) {
      const r = await direct(['sh', '-c', 'exit 5'], inline);
      assert.equal(r.spawnedBeforeReturn, false);
      assert.deepEqual(await r.exited, [5, 0]);
    }
  });

  it('inline: a start that fails is reported before spawn returns, with its errno and nothing to watch', async () => {
    const r = await direct(['no-such-command-drover'], true);
    assert.equal(r.spawnedBeforeReturn, true);
    assert.deepEqual(r.onSpawnArgs, [2 /* ENOENT */, 0, -1, -1]);
  });

  it('an inline that is not a boolean is a TypeError, and nothing starts', async () => {
    let called = false;
    for (const bad of ['yes', 1, null, {}]) {
      assert.throws(
        () => real().spawn('true', ['true'], ['PATH=/usr/bin:/bin'], tmp.dir, () => (called = true), () => (called = true), bad as boolean),
        (e: Error) => e instanceof TypeError && /inline must be a boolean/.test(e.message),
      );
    }
    await new Promise((r) => setTimeout(r, 50)); // a start queued by mistake would have reported by now
    assert.equal(called, false);
  });

  it("'idle' starts inline only when none of its processes is starting or running; 'threads' never", async () => {
    const seen: unknown[] = [];
    const recording = { spawn: (...a: Parameters<NativeBinding['spawn']>) => (seen.push(a[6]), real().spawn(...a)) };
    const spawner = chooseSpawner('native', undefined, () => ({ binding: recording }), undefined, 'idle');
    const req = (file: string, args: string[] = []) => ({ file, args, cwd: tmp.dir, env: { PATH: '/usr/bin:/bin' } });
    const drain = (p: SpawnedProcess) => (p.stdout.resume(), p.stderr.resume(), p.exited);
    assert.equal(nativeLive(), 0);
    const long = (await spawner(req('sleep', ['0.3']))) as SpawnedProcess;
    const short = (await spawner(req('true'))) as SpawnedProcess; // while the sleep runs
    assert.equal(nativeLive(), 2);
    await Promise.all([drain(long), drain(short)]);
    assert.equal(nativeLive(), 0);
    const failed = await spawner(req('no-such-command-drover'));
    assert.equal('error' in failed && failed.code, 'ENOENT');
    await drain((await spawner(req('true'))) as SpawnedProcess); // the failed start left nothing counted
    assert.deepEqual(seen, [true, false, true, true]);

    seen.length = 0;
    const threads = chooseSpawner('native', undefined, () => ({ binding: recording }), undefined, 'threads');
    await drain((await threads(req('true'))) as SpawnedProcess);
    assert.deepEqual(seen, [false]);
    assert.equal(nativeLive(), 0);
  });
});

describe('spawner selection', () => {
  const unavailable = () => ({ reason: 'not built here' });
  it('falls back to child_process when the addon is unavailable, and warns once with the reason', () => {
    const warns: unknown[] = [];
    const log = { warn: (o: unknown) => warns.push(o), info() {}, error() {}, debug() {} } as unknown as Parameters<typeof chooseSpawner>[3];
    assert.equal(chooseSpawner('auto', undefined, unavailable, log), spawnWithNode);
    assert.equal(chooseSpawner('auto', undefined, unavailable, log), spawnWithNode);
    assert.deepEqual(warns, [{ reason: 'not built here' }]);
  });
  it('"native" asked for explicitly but unavailable is an error with the reason', () => {
    assert.throws(() => chooseSpawner('native', undefined, unavailable), /native spawner requested but unavailable: not built here/);
  });
  it('"node", or DROVER_SPAWNER=node with "auto", never loads the addon', () => {
    const load = () => assert.fail('loaded');
    assert.equal(chooseSpawner('node', undefined, load), spawnWithNode);
    assert.equal(chooseSpawner('auto', 'node', load), spawnWithNode);
  });
});
