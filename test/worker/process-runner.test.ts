import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LOG_LIMITS } from '../../src/core/protocol.js';
import { runAttempt, whenCleanedUp } from '../../src/worker/process-runner.js';
import { cutMarker } from '../../src/worker/log-pump.js';
import { TASK_PATH } from '../../src/worker/task-env.js';
import { collect, exists, spec, SPAWNERS, tempDir } from './helpers.js';

const GRACE = 300;

/** Resolves once the task printed "ready" (it has set its traps). */
async function ready(c: ReturnType<typeof collect>): Promise<void> {
  while (!c.text('stdout').includes('ready')) await new Promise((r) => setTimeout(r, 5));
}

// Every behaviour holds for both ways of starting a process (native-spawn.ts): the addon and Node's child_process.
for (const spawner of SPAWNERS) describe(`process runner (${spawner} spawner)`, { timeout: 30_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  before(() => (tmp = tempDir('drover-runner-')));
  after(() => tmp.remove());
  const opts = () => ({ workDir: tmp.dir, killGraceMs: GRACE, spawner });

  it('runs a command without a shell and captures both streams', async () => {
    const c = collect(spec({ command: 'sh', args: ['-c', 'echo hello; echo oops >&2; pwd'] }), opts());
    const pid = await c.started;
    assert.ok(pid > 0);
    const r = await c.run.result;
    assert.deepEqual(r, { outcome: 'succeeded', exitCode: 0, signal: null, error: null, durationMs: r.durationMs });
    const [hello, cwd] = c.text('stdout').split('\n');
    assert.equal(hello, 'hello');
    assert.equal(c.text('stderr'), 'oops\n');
    assert.deepEqual(c.chunks.map((x) => x.seq), c.chunks.map((_, i) => i));
    // cwd was the fresh per-attempt dir, and it is removed right after the result (not before it: off the exit's path).
    assert.equal(path.dirname(cwd!), tmp.dir);
    assert.match(path.basename(cwd!), /^01TESTTASK-1-.{6}$/);
    await c.run.cleanedUp;
    assert.equal(existsSync(cwd!), false);
  });

  it('passes arguments verbatim (no shell expansion)', async () => {
    const c = collect(spec({ command: 'printf', args: ['%s|', '$HOME', '*', 'a b'] }), opts());
    const r = await c.run.result;
    assert.equal(r.outcome, 'succeeded');
    assert.equal(c.text('stdout'), '$HOME|*|a b|');
  });

  it('reports a non-zero exit as failed with its code', async () => {
    const c = collect(spec({ command: 'sh', args: ['-c', 'echo bad >&2; exit 3'] }), opts());
    const r = await c.run.result;
    assert.equal(r.outcome, 'failed');
    assert.equal(r.exitCode, 3);
    assert.equal(r.signal, null);
    assert.equal(r.error, null);
    assert.equal(c.text('stderr'), 'bad\n');
  });

  it('reports a start failure (ENOENT) as start_failed with exitCode null, naming the PATH searched', async () => {
    let startedCalled = false;
    const run = runAttempt(spec({ command: 'drover-no-such-command' }), { ...opts(), onStarted: () => (startedCalled = true) });
    const r = await run.result;
    assert.equal(r.outcome, 'start_failed');
    assert.equal(r.exitCode, null);
    assert.equal(r.signal, null);
    assert.equal(r.error, `cannot start drover-no-such-command: not found in PATH=${TASK_PATH}`);
    assert.equal(startedCalled, false);
    assert.equal(run.pid, null);
  });

  it('fails an attempt with neither command nor script', async () => {
    const r = await runAttempt(spec({}), opts()).result;
    assert.equal(r.outcome, 'failed');
    assert.match(r.error ?? '', /neither command nor script/);
  });

  it('runs a script with the default interpreter (sh), DROVER_* env and the task env', async () => {
    const script = [
      'echo "$DROVER_TASK_ID/$DROVER_ATTEMPT/$GREETING"',
      'test -d "$DROVER_OUTPUT_DIR" && echo "out:$(basename "$DROVER_OUTPUT_DIR")"',
      'stat -c %a "$0"',
      'test "$(pwd)" = "$(dirname "$DROVER_OUTPUT_DIR")" && echo cwd-ok',
    ].join('\n');
    // A task's env cannot override the DROVER_* variables.
    const c = collect(spec({ taskId: 'TASKX', number: 3, script, env: { GREETING: 'hi there', DROVER_TASK_ID: 'spoofed' } }), opts());
    const r = await c.run.result;
    assert.equal(r.outcome, 'succeeded', c.text('stderr'));
    assert.equal(c.text('stdout'), 'TASKX/3/hi there\nout:out\n700\ncwd-ok\n');
  });

  it('runs a script with a given interpreter', async () => {
    const script = 'console.log(process.env.DROVER_TASK_ID, process.env.DROVER_ATTEMPT, process.argv.length)';
    const c = collect(spec({ taskId: 'TASKN', number: 2, script, interpreter: [process.execPath, '--no-warnings'] }), opts());
    const r = await c.run.result;
    assert.equal(r.outcome, 'succeeded', c.text('stderr'));
    assert.equal(c.text('stdout'), 'TASKN 2 2\n');
  });

  it('times out: kills the whole group, including children that ignore SIGTERM', async () => {
    // The leader and its background child both ignore SIGTERM: only the SIGKILL after the grace ends them.
    const c = collect(spec({ command: 'sh', args: ['-c', 'trap "" TERM; sleep 100 & echo $!; wait'], timeoutMs: 200 }), opts());
    const pgid = await c.started;
    const r = await c.run.result;
    assert.equal(r.outcome, 'timed_out');
    assert.equal(r.exitCode, null);
    assert.equal(r.signal, 'SIGKILL');
    assert.equal(r.error, 'timed out after 200 ms');
    assert.ok(r.durationMs >= 200 + GRACE - 20, `durationMs ${r.durationMs}`);
    const child = Number(c.text('stdout').trim());
    assert.ok(child > 0);
    assert.equal(exists(child), false, 'background child survived');
    assert.equal(exists(-pgid), false, 'process group survived');
  });

  it('a task writing past the log limit runs to its end; the log is the limit\'s size plus the marker', async () => {
    const limit = 256 * 1024;
    const c = collect(spec({ command: 'sh', args: ['-c', 'head -c 8000000 /dev/zero; echo done >&2'] }), { ...opts(), logLimits: { ...LOG_LIMITS, maxKeptBytes: limit } });
    const r = await c.run.result;
    assert.equal(r.outcome, 'succeeded', r.error ?? '');
    assert.equal(c.text('stdout').length, limit);
    assert.equal(c.text('stderr'), cutMarker(limit), JSON.stringify(c.chunks.map((x) => [x.stream, x.data.length])));
    assert.equal(c.run.pump.stats().droppedBytes, 8_000_000 - limit + 'done\n'.length);
  });

  it('a timeout past setTimeout\'s limit (30 days) does not fire early: the task runs to its end', async () => {
    // Node turns a delay over 2^31 - 1 ms into 1 ms; the runner chains timers instead (core/long-timeout.ts).
    const c = collect(spec({ command: 'sh', args: ['-c', 'sleep 0.2; echo done'], timeoutMs: 30 * 86_400_000 }), opts());
    const r = await c.run.result;
    assert.equal(r.outcome, 'succeeded', r.error ?? '');
    assert.equal(c.text('stdout'), 'done\n');
  });

  it('after a kill, waits for the group even when the leader exits at once', async () => {
    // The leader dies of SIGTERM; its child ignores it and must still be killed (SIGKILL at the end of the grace).
    const c = collect(spec({ command: 'sh', args: ['-c', '(trap "" TERM; exec sleep 100) & echo $!; wait'], timeoutMs: 150 }), opts());
    const pgid = await c.started;
    const r = await c.run.result;
    assert.equal(r.outcome, 'timed_out');
    assert.equal(r.signal, 'SIGTERM');
    const child = Number(c.text('stdout').trim());
    assert.equal(exists(child), false, 'child that ignored SIGTERM survived');
    assert.equal(exists(-pgid), false);
  });

  it('cancels a running attempt with SIGTERM', async () => {
    const c = collect(spec({ command: 'sleep', args: ['100'] }), opts());
    const pid = await c.started;
    c.run.kill('cancelled', 'user asked');
    const r = await c.run.result;
    assert.deepEqual({ ...r, durationMs: 0 }, { outcome: 'cancelled', exitCode: null, signal: 'SIGTERM', error: 'user asked', durationMs: 0 });
    assert.equal(exists(pid), false);
  });

  it('a kill\'s own grace: SIGKILL after graceMs, not the runner\'s killGraceMs', async () => {
    const c = collect(spec({ command: 'sh', args: ['-c', 'trap "" TERM; sleep 100 & echo ready; wait'] }), { ...opts(), killGraceMs: 10_000 });
    const pgid = await c.started;
    await ready(c);
    const t0 = Date.now();
    c.run.kill('lost', 'self-fenced', { graceMs: 100 });
    const r = await c.run.result;
    assert.equal(r.outcome, 'lost');
    assert.equal(r.signal, 'SIGKILL');
    assert.ok(Date.now() - t0 < 5_000, `took ${Date.now() - t0} ms`);
    assert.equal(exists(-pgid), false);
  });

  it('a later kill with a shorter grace brings the SIGKILL forward and keeps the first reason', async () => {
    const c = collect(spec({ command: 'sh', args: ['-c', 'trap "" TERM; sleep 100 & echo ready; wait'] }), { ...opts(), killGraceMs: 10_000 });
    const pgid = await c.started;
    await ready(c);
    c.run.kill('cancelled', 'user asked'); // SIGKILL in 10 s
    const t0 = Date.now();
    c.run.kill('lost', 'self-fenced', { graceMs: 50 });
    c.run.kill('lost', 'again', { graceMs: 60_000 }); // a longer grace never delays it
    const r = await c.run.result;
    assert.equal(r.outcome, 'cancelled');
    assert.equal(r.error, 'user asked');
    assert.equal(r.signal, 'SIGKILL');
    assert.ok(Date.now() - t0 < 5_000, `took ${Date.now() - t0} ms`);
    assert.equal(exists(-pgid), false);
  });

  it('tells its group watch about the group when spawned and when gone', async () => {
    const events: string[] = [];
    const c = collect(spec({ taskId: 'TASKG', command: 'sh', args: ['-c', 'sleep 100 & echo started'] }), {
      ...opts(),
      groups: { add: (pgid, taskId) => events.push(`add ${pgid} ${taskId}`), remove: (pgid) => events.push(`del ${pgid}`) },
    });
    const pgid = await c.started;
    const r = await c.run.result;
    assert.equal(r.outcome, 'succeeded');
    assert.deepEqual(events, [`add ${pgid} TASKG`, `del ${pgid}`]);
  });

  it('a cancel before the spawn ends the attempt without running anything', async () => {
    let startedCalled = false;
    const run = runAttempt(spec({ command: 'sleep', args: ['100'] }), { ...opts(), onStarted: () => (startedCalled = true) });
    run.kill('cancelled');
    const r = await run.result;
    assert.equal(r.outcome, 'cancelled');
    assert.equal(startedCalled, false);
    assert.equal(run.pid, null);
  });

  it('batch contract: background children do not outlive a leader that exits normally', async () => {
    // The background sleep also holds stdout open: the attempt would never end without the group kill.
    const c = collect(spec({ command: 'sh', args: ['-c', 'sleep 100 & echo $!'] }), opts());
    const pgid = await c.started;
    const r = await c.run.result;
    assert.equal(r.outcome, 'succeeded');
    assert.equal(r.exitCode, 0);
    const child = Number(c.text('stdout').trim());
    assert.equal(exists(child), false, 'background child survived');
    assert.equal(exists(-pgid), false);
  });

  it('closes pipes held open by a descendant that left the group, once they stay silent', async () => {
    // setsid moves the sleep out of the group: the group kill cannot reach it and it keeps stdout open.
    // The attempt still ends (drainIdleMs after the group is gone); the escaped process is the documented limit.
    // The fifo makes the leader exit only after the child has left the group.
    const script = 'mkfifo f; setsid sh -c \'echo $$ > f; exec sleep 100\' & read pid < f; echo "$pid"';
    const c = collect(spec({ script }), { ...opts(), drainIdleMs: 100 });
    const r = await c.run.result;
    const escaped = Number(c.text('stdout').trim());
    try {
      assert.equal(r.outcome, 'succeeded');
      assert.ok(escaped > 0);
    } finally {
      if (escaped > 0 && exists(escaped)) process.kill(escaped, 'SIGKILL');
    }
  });

  it('numbers chunks in read order across both streams and keeps each stream in order', async () => {
    const script = 'i=0; while [ $i -lt 300 ]; do echo "out$i"; echo "err$i" >&2; i=$((i+1)); done';
    const c = collect(spec({ script }), { ...opts(), logLimits: { maxChunkBytes: 100, maxInFlightBytes: LOG_LIMITS.maxInFlightBytes } });
    const r = await c.run.result;
    assert.equal(r.outcome, 'succeeded');
    assert.deepEqual(c.chunks.map((x) => x.seq), c.chunks.map((_, i) => i));
    assert.ok(c.chunks.every((x) => x.data.length > 0 && x.data.length <= 100));
    const want = (p: string) => Array.from({ length: 300 }, (_, i) => `${p}${i}\n`).join('');
    assert.equal(c.text('stdout'), want('out'));
    assert.equal(c.text('stderr'), want('err'));
  });

  it('bounds buffered output when the consumer acks slowly (50 MB through a 1 MiB window)', { timeout: 60_000 }, async () => {
    // `seq 1 6500000` prints ~52 MB. The consumer pulls whatever is readable but
    // acks only once the window is full (and then a little later), so the pump
    // must stop reading and the child must block, window after window. (The
    // child's EOF needs no ack, so the last partial window cannot deadlock.)
    const N = 6_500_000;
    let run!: ReturnType<typeof runAttempt>;
    let pulledThrough = -1;
    let ackTimer: NodeJS.Timeout | null = null;
    let carry = '';
    let expectNext = 1;
    let bytes = 0;
    let maxSeen = 0;
    let bad: string | null = null;
    const ackLater = () => {
      ackTimer ??= setTimeout(() => {
        ackTimer = null;
        run.pump.ack(pulledThrough);
      }, 2);
    };
    run = runAttempt(spec({ command: 'seq', args: ['1', String(N)] }), {
      ...opts(),
      onOutput: () => {
        maxSeen = Math.max(maxSeen, run.pump.inFlightBytes);
        for (let c = run.pump.next(); c; c = run.pump.next()) {
          if (c.seq !== pulledThrough + 1) bad ??= `seq ${c.seq} after ${pulledThrough}`;
          pulledThrough = c.seq;
          bytes += c.data.length;
          const lines = (carry + c.data.toString()).split('\n');
          carry = lines.pop()!;
          for (const l of lines) {
            if (Number(l) !== expectNext) bad ??= `line ${l}, expected ${expectNext}`;
            expectNext++;
          }
        }
        if (run.pump.inFlightBytes >= LOG_LIMITS.maxInFlightBytes) ackLater();
      },
    });
    const r = await run.result;
    if (ackTimer) clearTimeout(ackTimer);
    assert.equal(bad, null);
    assert.equal(r.outcome, 'succeeded');
    assert.equal(carry, '');
    assert.equal(expectNext, N + 1);
    assert.ok(bytes > 50_000_000, `only ${bytes} bytes`);
    const s = run.pump.stats();
    assert.ok(s.pauseCount > 20, `the pipes were paused only ${s.pauseCount} times`);
    assert.ok(s.peakInFlightBytes <= LOG_LIMITS.maxInFlightBytes, `peak ${s.peakInFlightBytes}`);
    assert.ok(maxSeen <= LOG_LIMITS.maxInFlightBytes);
  });

  it('a work dir on tmpfs (its directory calls made synchronously) keeps the same contract', async (t) => {
    if (!existsSync('/dev/shm')) return t.skip('no /dev/shm');
    const shm = mkdtempSync('/dev/shm/drover-runner-');
    try {
      const c = collect(spec({ script: 'pwd; test -d "$DROVER_OUTPUT_DIR" && echo out-ok; touch "$DROVER_OUTPUT_DIR/x"' }), { ...opts(), workDir: shm });
      const r = await c.run.result;
      assert.equal(r.outcome, 'succeeded', c.text('stderr'));
      const [cwd, ok] = c.text('stdout').trim().split('\n');
      assert.equal(path.dirname(cwd!), shm);
      assert.equal(ok, 'out-ok');
      await c.run.cleanedUp;
      assert.deepEqual(readdirSync(shm), [], 'work dir (with a file left in out/) removed');
      const run = runAttempt(spec({ command: 'true' }), { ...opts(), workDir: shm });
      const plain = await run.result;
      assert.equal(plain.outcome, 'succeeded');
      await run.cleanedUp;
      assert.deepEqual(readdirSync(shm), []);
    } finally {
      rmSync(shm, { recursive: true, force: true });
    }
  });

  it('removes the work dir and its script after the attempt (cleanedUp, and whenCleanedUp for all)', async () => {
    const c = collect(spec({ script: 'echo "$0"; touch "$DROVER_OUTPUT_DIR/result.txt"' }), opts());
    await c.run.result;
    await whenCleanedUp();
    const scriptPath = c.text('stdout').trim();
    assert.equal(path.basename(scriptPath), '.drover-script');
    await assert.rejects(stat(path.dirname(scriptPath)), { code: 'ENOENT' });
  });
});
