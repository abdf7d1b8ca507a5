/** An agent that died with attempts running: the next agent on the work dir stops exactly those process groups (older agents' .pgid records too). */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { reapLeftovers } from '../../src/worker/leftovers.js';
import { collect, runningMembers, spec, tempDir } from './helpers.js';

/** A detached `sleep` in its own group, as the runner starts attempts; `env` decides whose it looks like. */
function orphan(env: Record<string, string>): ChildProcess {
  const c = spawn('sh', ['-c', 'sleep 60 & wait'], { detached: true, stdio: 'ignore', env: { ...process.env, ...env } });
  return c;
}

describe('leftover attempts of a dead agent', () => {
  let tmp: ReturnType<typeof tempDir>;
  const started: ChildProcess[] = [];
  before(() => (tmp = tempDir('drover-leftovers-')));
  after(() => {
    for (const c of started) {
      try {
        process.kill(-c.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    tmp.remove();
  });

  it('kills a recorded group whose processes carry the task id, and removes its directory', async () => {
    const ours = orphan({ DROVER_TASK_ID: '01TASKLEFT' });
    started.push(ours);
    const dir = path.join(tmp.dir, '01TASKLEFT-1-abcdef');
    mkdirSync(dir);
    writeFileSync(`${dir}.pgid`, `${ours.pid} 01TASKLEFT\n`);
    // Wait until the shell has its environment in /proc (it is exec'd).
    await new Promise((r) => setImmediate(r));
    const exited = once(ours, 'exit');
    const stopped = await reapLeftovers(tmp.dir);
    assert.equal(stopped.length, 1);
    assert.equal(stopped[0]!.pgid, ours.pid);
    const [, signal] = await exited;
    assert.equal(signal, 'SIGKILL');
    assert.equal(existsSync(dir), false);
    assert.equal(existsSync(`${dir}.pgid`), false);
  });

  it('leaves alone a group that does not carry the recorded task id (a reused pgid)', async () => {
    const other = orphan({ DROVER_TASK_ID: 'SOMETHING-ELSE' });
    started.push(other);
    const dir = path.join(tmp.dir, '01TASKGONE-1-abcdef');
    mkdirSync(dir);
    writeFileSync(`${dir}.pgid`, `${other.pid} 01TASKGONE\n`);
    const stopped = await reapLeftovers(tmp.dir);
    assert.deepEqual(stopped, []);
    assert.equal(other.exitCode, null);
    process.kill(other.pid!, 0); // still alive
    assert.equal(existsSync(dir), false, 'the stale directory is removed all the same');
  });

  it('kills the groups whose processes carry an attempt dir\'s DROVER_OUTPUT_DIR, removes that dir, leaves the rest', async () => {
    const dir = path.join(tmp.dir, '01TASKMARK-2-Ab3dEf');
    mkdirSync(path.join(dir, 'out'), { recursive: true });
    const ours = orphan({ DROVER_TASK_ID: '01TASKMARK', DROVER_OUTPUT_DIR: path.join(dir, 'out') });
    // Same task id, but the marker of another attempt (whose dir is gone): not this dir's to kill.
    const other = orphan({ DROVER_TASK_ID: '01TASKMARK', DROVER_OUTPUT_DIR: path.join(tmp.dir, '01TASKMARK-1-zzzzzz', 'out') });
    started.push(ours, other);
    // Not of the runner's making: left alone even with an out dir inside.
    mkdirSync(path.join(tmp.dir, 'keep-me', 'out'), { recursive: true });
    await new Promise((r) => setImmediate(r));
    const exited = once(ours, 'exit');
    const stopped = await reapLeftovers(tmp.dir);
    assert.deepEqual(stopped.map((s) => [s.pgid, s.taskId]), [[ours.pid, '01TASKMARK']]);
    assert.ok(stopped[0]!.pids.includes(ours.pid!));
    assert.equal((await exited)[1], 'SIGKILL');
    assert.equal(existsSync(dir), false);
    assert.equal(existsSync(path.join(tmp.dir, 'keep-me')), true);
    assert.equal(other.exitCode, null);
    process.kill(other.pid!, 0); // still alive
  });

  it('finds an attempt the runner started, by its work dir alone (as the next agent would after a kill -9)', async () => {
    const work = path.join(tmp.dir, 'runner-work');
    mkdirSync(work);
    const c = collect(spec({ taskId: '01TASKRUN', command: 'sh', args: ['-c', 'sleep 100 & echo ready; wait'] }), { workDir: work, killGraceMs: 100 });
    const pgid = await c.started;
    while (!c.text('stdout').includes('ready')) await new Promise((r) => setTimeout(r, 5));
    // "ready" comes once the shell has forked its sleep, not once the sleep has exec'ed: a process in the
    // middle of execve shows no environment in /proc for a moment (seen in CI under load: 1 of 2 found).
    // The scan kills by group, so such a process dies all the same; this case counts both, so it waits.
    const isSleep = (pid: number) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep\0');
      } catch {
        return false;
      }
    };
    while (!runningMembers(pgid).some(isSleep)) await new Promise((r) => setTimeout(r, 5));
    const stopped = await reapLeftovers(work);
    assert.deepEqual(stopped.map((s) => [s.pgid, s.taskId]), [[pgid, '01TASKRUN']]);
    assert.equal(stopped[0]!.pids.length, 2, 'the shell and its sleep');
    const r = await c.run.result;
    assert.equal(r.signal, 'SIGKILL');
    assert.deepEqual(runningMembers(pgid), []);
  });
});
