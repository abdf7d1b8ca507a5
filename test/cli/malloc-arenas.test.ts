/**
 * The long-running commands' malloc arena limit (src/cli/malloc-arenas.ts and
 * the drover_memory addon's arenaMax/exec, native/memory.c): when it
 * re-executes, with what, and what it leaves alone; the addon's execve on a
 * real process (same pid, inherited descriptors, the new environment, its
 * argument checks); and a real `drover server` that ends up with
 * MALLOC_ARENA_MAX=2 in its own environment under the pid it was started
 * with, or keeps the operator's value.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { arenaLimitInEnv, limitMallocArenas, limitMallocArenasEarly, loadArenaBinding, MALLOC_ARENAS, reexecArgs, type ArenaBinding } from '../../src/cli/malloc-arenas.js';
import { loadNativeSpawn } from '../../src/worker/native-spawn.js';
import { BIN } from '../e2e/harness.js';

/** A binding that records its calls; exec "fails" as execve would, by throwing (a real one would not return). */
function fakeBinding(execThrows = true): ArenaBinding & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    supported: true,
    arenaMax(n) {
      calls.push(`arenaMax ${n}`);
      return true;
    },
    exec(file, argv, envp) {
      calls.push(`exec ${file} ${argv.join(' ')} ${envp.filter((e) => e.startsWith('MALLOC_')).join(' ')}`);
      if (execThrows) throw new Error('execve failed: No such file or directory');
    },
  };
}

describe('malloc arenas: the decision', () => {
  it('the environment bounds them already: MALLOC_ARENA_MAX, or the glibc tunable among others', () => {
    assert.equal(arenaLimitInEnv({}), false);
    assert.equal(arenaLimitInEnv({ MALLOC_ARENA_MAX: '' }), false);
    assert.equal(arenaLimitInEnv({ MALLOC_ARENA_MAX: '4' }), true);
    assert.equal(arenaLimitInEnv({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=3' }), true);
    assert.equal(arenaLimitInEnv({ GLIBC_TUNABLES: 'glibc.malloc.tcache_count=0:glibc.malloc.arena_max=3' }), true);
    assert.equal(arenaLimitInEnv({ GLIBC_TUNABLES: 'glibc.malloc.arena_test=3' }), false);
  });

  it('re-executes with the same Node flags, script and arguments, and MALLOC_ARENA_MAX set once', () => {
    const r = reexecArgs(
      { execPath: '/usr/bin/node', argv0: 'node', execArgv: ['--enable-source-maps'], argv: ['/usr/bin/node', '/x/bin/drover.js', 'server', '--port', '0'] },
      { PATH: '/bin', MALLOC_ARENA_MAX: '', UNSET: undefined },
    );
    assert.equal(r.file, '/usr/bin/node');
    assert.deepEqual(r.argv, ['node', '--enable-source-maps', '/x/bin/drover.js', 'server', '--port', '0']);
    assert.deepEqual(r.envp, ['PATH=/bin', `MALLOC_ARENA_MAX=${MALLOC_ARENAS}`]);
  });

  it('set in the environment: neither exec nor mallopt', () => {
    const b = fakeBinding();
    assert.equal(limitMallocArenas({ binding: b, env: { MALLOC_ARENA_MAX: '8' } }), 'environment');
    assert.deepEqual(b.calls, []);
  });

  it('an IPC channel: mallopt only (its descriptor is not handed to a second start)', () => {
    const b = fakeBinding();
    assert.equal(limitMallocArenas({ binding: b, env: { NODE_CHANNEL_FD: '3' } }), 'mallopt');
    assert.deepEqual(b.calls, [`arenaMax ${MALLOC_ARENAS}`]);
  });

  it('execve fails: goes on with mallopt', () => {
    const b = fakeBinding();
    assert.equal(limitMallocArenas({ binding: b, env: { PATH: '/bin' } }), 'mallopt');
    assert.equal(b.calls.length, 2);
    assert.match(b.calls[0]!, new RegExp(`^exec ${process.execPath} .* MALLOC_ARENA_MAX=${MALLOC_ARENAS}$`));
    assert.equal(b.calls[1], `arenaMax ${MALLOC_ARENAS}`);
  });

  it('at CLI start: only when the first argument is server or dev', () => {
    for (const args of [['ls'], ['worker', '--slots', '2'], ['--token', 'x', 'server'], ['submit', '--', 'server'], []]) {
      const b = fakeBinding();
      assert.equal(limitMallocArenasEarly(args, { binding: b, env: {} }), null, args.join(' '));
      assert.deepEqual(b.calls, []);
    }
    for (const args of [['server', '--port', '0'], ['dev']]) {
      const b = fakeBinding();
      assert.equal(limitMallocArenasEarly(args, { binding: b, env: {} }), 'mallopt');
      assert.equal(b.calls.length, 2, args.join(' '));
    }
  });

  it('no addon: nothing', () => {
    assert.equal(limitMallocArenas({ binding: null, env: {} }), 'none');
  });
});

describe('malloc arenas: the addon', () => {
  const b = loadArenaBinding();
  const built = 'binding' in loadNativeSpawn();

  it('is built wherever the native spawner is', () => {
    assert.equal(b !== null, built);
  });

  it('refuses bad arguments with a TypeError naming them, and a failed execve with its errno', { skip: !built && 'addons not built on this platform' }, () => {
    assert.throws(() => b!.arenaMax(0), { name: 'TypeError', message: /n must be an integer from 1 to 64/ });
    assert.throws(() => b!.arenaMax('2' as never), { name: 'TypeError' });
    assert.throws(() => b!.exec('node', ['node'], []), { name: 'TypeError', message: /file must be an absolute path/ });
    assert.throws(() => b!.exec('/bin/true', ['a\0b'], []), { name: 'TypeError', message: /argv must be an array of strings/ });
    assert.throws(() => b!.exec('/bin/true', ['true'], 'X=1' as never), { name: 'TypeError', message: /envp must be an array of strings/ });
    assert.throws(() => b!.exec('/nonexistent/drover-test', ['x'], []), { message: /execve failed: No such file or directory/ });
    assert.equal(b!.arenaMax(8), true);
  });

  it('execve keeps the pid, stdin, stdout and stderr (Node marks them close-on-exec), and gives the new environment', { skip: !built && 'addons not built on this platform' }, () => {
    const addon = join(BIN, '..', '..', 'build', 'Release', 'drover_memory.node');
    // The child prints its pid, then becomes sh, which prints its own pid ($$) and X, reads a line from stdin and writes it to stderr.
    const script = `process.stdout.write(process.pid + '\\n'); require(${JSON.stringify(addon)}).exec('/bin/sh', ['sh', '-c', 'echo $$ $X; read l; echo "$l" >&2'], ['X=from-exec']);`;
    const r = spawnSync(process.execPath, ['-e', script], { input: 'a line\n', encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const [before, after] = r.stdout.trim().split('\n');
    assert.equal(after, `${before} from-exec`);
    assert.equal(r.stderr, 'a line\n');
  });
});

describe('malloc arenas: drover server', { skip: !('binding' in loadNativeSpawn()) && 'addons not built on this platform' }, () => {
  /** The environment /proc shows for the pid that was spawned, once the server listens (after any re-execution). */
  async function serverEnviron(env: NodeJS.ProcessEnv): Promise<string[]> {
    const dir = mkdtempSync(join(tmpdir(), 'drover-arenas-'));
    const child = spawn(process.execPath, [BIN, 'server', '--db', `sqlite:${join(dir, 'db.sqlite')}`, '--port', '0', '--log-level', 'info'], {
      // Dumpable, so its environ is readable here without root (proc-guard.ts).
      env: { ...env, DROVER_ADMIN_TOKEN: 'arenas-admin-token-0123456789', DROVER_EXIT_WITH_PARENT: '1', DROVER_KEEP_DUMPABLE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      await new Promise<void>((resolve, reject) => {
        const read = (d: Buffer) => {
          out += d.toString();
          if (/listening on http/.test(out)) resolve();
        };
        child.stdout.on('data', read);
        child.stderr.on('data', read);
        child.on('exit', (code) => reject(new Error(`server exited ${code}: ${out}`)));
      });
      return readFileSync(`/proc/${child.pid}/environ`, 'utf8').split('\0');
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('runs with MALLOC_ARENA_MAX=2 under the pid it was started with', async () => {
    const env = { ...process.env };
    delete env.MALLOC_ARENA_MAX;
    delete env.GLIBC_TUNABLES;
    const environ = await serverEnviron(env);
    assert.ok(environ.includes(`MALLOC_ARENA_MAX=${MALLOC_ARENAS}`), environ.filter((e) => e.startsWith('MALLOC')).join(' '));
  });

  it("keeps the operator's MALLOC_ARENA_MAX", async () => {
    const environ = await serverEnviron({ ...process.env, MALLOC_ARENA_MAX: '4' });
    assert.ok(environ.includes('MALLOC_ARENA_MAX=4'));
    assert.ok(!environ.includes(`MALLOC_ARENA_MAX=${MALLOC_ARENAS}`));
  });
});
