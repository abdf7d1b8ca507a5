/** An agent that died with attempts running: the next agent on the work dir stops exactly those process groups. */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { reapLeftovers } from '../../src/worker/leftovers.js';
import { tempDir } from './helpers.js';

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
});
