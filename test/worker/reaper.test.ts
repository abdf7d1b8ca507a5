/**
 * The reaper (src/worker/reaper.ts): a process holding a pipe from the agent
 * that stops the registered process groups when the pipe closes.
 * First with this test as the parent holding the pipe, then with a real
 * `drover worker` killed outright (kill -9).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { AgentMessage, AssignedAttempt } from '../../src/core/protocol.js';
import { loadNativeSpawn } from '../../src/worker/native-spawn.js';
import { parseReaperLine } from '../../src/worker/reaper.js';
import { REAPER_MAX_GRACE_MS, reaperCommand } from '../../src/worker/reaper-command.js';
import { ReaperClient } from '../../src/worker/reaper-client.js';
import { FakeServer, TOKEN } from './fake-server.js';
import { fencingToken, isRunning, runningMembers, tempDir } from './helpers.js';

const CLI_MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const GRACE_MS = 400;
/** A fallback reaper starts at once, well inside ReaperClient's 1 s restart delay. */
const RESTART_WITHIN_MS = 900;

/** A group like an attempt's: detached, carrying DROVER_TASK_ID, ignoring SIGTERM (leader and child). */
function fakeAttempt(taskId: string): ChildProcess {
  return spawn('sh', ['-c', 'trap "" TERM; sleep 60 & wait'], { detached: true, stdio: 'ignore', env: { PATH: process.env.PATH, DROVER_TASK_ID: taskId } });
}

/** Polls (every few ms) until `pred()` holds; fails after `timeoutMs`. */
async function until(pred: () => boolean, timeoutMs: number, what: string): Promise<number> {
  const t0 = performance.now();
  while (!pred()) {
    if (performance.now() - t0 > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(5);
  }
  return performance.now() - t0;
}

/** True once the process catches or ignores SIGHUP, SIGINT and SIGTERM (SigCgt: reaper.ts's handlers; SigIgn: reaper.c's SIG_IGN). */
function catchesSignals(pid: number): boolean {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const maskOf = (field: string) => BigInt(`0x${new RegExp(`${field}:\\s*([0-9a-f]+)`).exec(status)?.[1] ?? '0'}`);
    const mask = maskOf('SigCgt') | maskOf('SigIgn');
    return [1n, 2n, 15n].every((sig) => (mask >> (sig - 1n)) & 1n);
  } catch {
    return false;
  }
}

/** The shell has exec'd with its environment in /proc (what the reaper checks) and has set its SIGTERM trap (SigIgn). */
function carriesTask(pid: number, taskId: string): boolean {
  try {
    const ignored = BigInt(`0x${/SigIgn:\s*([0-9a-f]+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '0'}`);
    return ((ignored >> 14n) & 1n) === 1n && readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`DROVER_TASK_ID=${taskId}`);
  } catch {
    return false;
  }
}

/** Reapers this file started; killed after the tests so a failed test cannot leave one holding the runner open. */
const reapers: ChildProcess[] = [];

/** Both implementations where the native one was built (npm install builds it with the native spawner); else reaper.ts alone. */
const REAPERS: ReadonlyArray<'native' | 'node'> = 'binding' in loadNativeSpawn() ? ['native', 'node'] : ['node'];

function startReaper(kind: 'native' | 'node', graceMs = GRACE_MS): { child: ChildProcess; stderr: () => string; exited: Promise<unknown> } {
  const cmd = reaperCommand(graceMs, kind);
  assert.equal(cmd.kind, kind);
  const child = spawn(cmd.file, cmd.args, { stdio: ['pipe', 'ignore', 'pipe'] });
  reapers.push(child);
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  return { child, stderr: () => err, exited: once(child, 'exit') };
}

describe('reaper', { timeout: 60_000 }, () => {
  const spawned: ChildProcess[] = [];
  let tmp: ReturnType<typeof tempDir>;
  before(() => (tmp = tempDir('drover-reaper-')));
  after(() => {
    for (const r of reapers) if (r.exitCode === null && r.signalCode === null) r.kill('SIGKILL');
    for (const c of spawned) {
      try {
        process.kill(-c.pid!, 'SIGKILL');
      } catch {
        // gone
      }
    }
    tmp.remove();
  });

  it('parses its input lines strictly', () => {
    assert.deepEqual(parseReaperLine('add 123 01TASK'), { op: 'add', pgid: 123, taskId: '01TASK' });
    assert.deepEqual(parseReaperLine('del 123'), { op: 'del', pgid: 123 });
    assert.deepEqual(parseReaperLine('deadline 123 100 400'), { op: 'deadline', pgid: 123, termInMs: 100, killInMs: 400 });
    for (const bad of ['add 1 T', 'add x T', 'add 12', 'del 12 T', 'kill 12', 'add -5 T', 'add 1e3 T', 'del 0x10', 'deadline 12 5', 'deadline 12 500 100', 'deadline 12 -1 5', 'deadline 12 1.5 5']) {
      assert.ok('error' in parseReaperLine(bad), bad);
    }
  });

  it('the native reaper is built wherever the native spawner is (one node-gyp run builds both), and is what an agent starts', () => {
    if (!('binding' in loadNativeSpawn())) return assert.equal(reaperCommand(400).kind, 'node');
    assert.equal(reaperCommand(400).kind, 'native');
    assert.equal(reaperCommand(400, 'node').kind, 'node');
  });

  it('a native reaper that cannot be started: the client falls back to reaper.ts at once, and that one reaps the registered group', async () => {
    const ours = fakeAttempt('01REAPFALLBACK');
    spawned.push(ours);
    await until(() => carriesTask(ours.pid!, '01REAPFALLBACK'), 5_000, 'shell started');
    const warnings: string[] = [];
    const log = { debug() {}, info() {}, error() {}, warn: (_o: object | string, msg?: string) => void warnings.push(msg ?? '') };
    const missing = path.join(tmp.dir, 'drover_reaper');
    const client = new ReaperClient(GRACE_MS, log, { kind: 'native', file: missing, args: ['--grace-ms', String(GRACE_MS)] });
    client.add(ours.pid!, '01REAPFALLBACK');
    const took = await until(() => client.pid !== null && catchesSignals(client.pid), 5_000, 'the fallback reaper running');
    assert.ok(took < RESTART_WITHIN_MS, `started after ${Math.round(took)} ms, not after the restart delay`);
    assert.equal(client.command.kind, 'node');
    assert.ok(warnings.includes('the native reaper did not start; using the reaper in JavaScript'), warnings.join('; '));
    // Its registry reached the new reaper: an outright close of its pipe (the agent gone) stops the group.
    await client.close();
    await until(() => runningMembers(ours.pid!).length === 0, GRACE_MS + 2_000, 'the group stopped by the fallback reaper');
  });

  for (const kind of REAPERS) {
    describe(`as a process (${kind === 'native' ? 'native/reaper.c' : 'reaper.ts'})`, () => {
      it('reports each malformed line once on stderr, registers nothing from them, and exits at once at EOF', async () => {
        const bad = ['add 1 T', 'add x T', 'add 12', 'del 12 T', 'kill 12', 'add -5 T', 'add 1e3 T', 'del 0x10', 'deadline 12 5', 'deadline 12 500 100', 'deadline 12 -1 5', 'deadline 12 1.5 5', 'add  12 T', 'deadline 12 1234567890123 1234567890124'];
        const r = startReaper(kind);
        await until(() => catchesSignals(r.child.pid!), 5_000, 'reaper handlers installed');
        r.child.stdin!.write(`${bad.join('\n')}\n${'x'.repeat(10_000)}\n`);
        const reports = () => r.stderr().split('\n').filter((l) => l.startsWith('drover reaper['));
        await until(() => reports().length >= bad.length + 1, 5_000, 'every bad line reported');
        const t0 = performance.now();
        r.child.stdin!.end();
        const [code] = (await r.exited) as [number | null];
        assert.equal(code, 0);
        assert.ok(performance.now() - t0 < 500, 'nothing was registered, so EOF ends it at once');
        assert.equal(reports().length, bad.length + 1, reports().join('\n'));
        for (const line of bad.slice(0, 3)) assert.ok(reports().some((l) => l.includes(`"${line}"`)), `${line} is named`);
      });

    it('a deadline the agent does not renew kills the group (dead-man switch); a renewed one waits; the reaper stays', async () => {
      const frozen = fakeAttempt('01REAPFROZEN');
      const renewed = fakeAttempt('01REAPRENEWED');
      spawned.push(frozen, renewed);
      await until(() => carriesTask(frozen.pid!, '01REAPFROZEN') && carriesTask(renewed.pid!, '01REAPRENEWED'), 5_000, 'shells started');
      const r = startReaper(kind);
      await until(() => catchesSignals(r.child.pid!), 5_000, 'reaper handlers installed');
      const t0 = performance.now();
      r.child.stdin!.write(`add ${frozen.pid} 01REAPFROZEN\nadd ${renewed.pid} 01REAPRENEWED\ndeadline ${frozen.pid} 100 400\ndeadline ${renewed.pid} 100 400\n`);
      await sleep(200);
      r.child.stdin!.write(`deadline ${renewed.pid} 5000 6000\n`);
      await until(() => runningMembers(frozen.pid!).length === 0, 2_000, 'the frozen agent\'s group stopped');
      const took = performance.now() - t0;
      assert.ok(took >= 350, `SIGTERM is ignored by the group: only the SIGKILL at 400 ms can stop it (took ${Math.round(took)} ms)`);
      assert.ok(runningMembers(renewed.pid!).length > 0, 'a renewed deadline is not due');
      assert.equal(r.child.exitCode, null, 'the reaper goes on (the agent may resume)');
      r.child.stdin!.write(`del ${renewed.pid}\n`);
      r.child.stdin!.end();
      await r.exited;
      assert.ok(runningMembers(renewed.pid!).length > 0, 'deleted before EOF: left alone');
    });

    it('at EOF stops the registered groups (SIGTERM, SIGKILL after the grace), only those, then exits; ignores INT/TERM/HUP before', async () => {
      const ours = fakeAttempt('01REAPOURS');
      const removed = fakeAttempt('01REAPDEL');
      const impostor = fakeAttempt('01SOMEONEELSE'); // registered under a task id it does not carry: a reused pgid
      spawned.push(ours, removed, impostor);
      await until(() => carriesTask(ours.pid!, '01REAPOURS') && carriesTask(removed.pid!, '01REAPDEL') && carriesTask(impostor.pid!, '01SOMEONEELSE'), 5_000, 'shells started');
      const r = startReaper(kind);
      await until(() => catchesSignals(r.child.pid!), 5_000, 'reaper handlers installed');
      r.child.stdin!.write(`add ${ours.pid} 01REAPOURS\nadd ${removed.pid} 01REAPDEL\nadd ${impostor.pid} 01REAPIMPOSTOR\nbogus line\ndel ${removed.pid}\n`);
      // A Ctrl-C to the terminal's group, a TERM, a HUP: the reaper stays.
      for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) r.child.kill(sig);
      await until(() => /expected "add <pgid> <taskId>", "del <pgid>" or "deadline <pgid> <termInMs> <killInMs>", got "bogus line"/.test(r.stderr()), 5_000, 'bad line reported');
      assert.equal(r.child.exitCode, null);
      assert.equal(r.child.signalCode, null);
      const t0 = performance.now();
      r.child.stdin!.end(); // the agent is gone
      const took = await until(() => runningMembers(ours.pid!).length === 0, GRACE_MS + 1_000, 'registered group stopped');
      assert.ok(took >= GRACE_MS - 50, `stopped after ${Math.round(took)} ms: the SIGTERM was ignored, so only the SIGKILL after the grace can have done it`);
      await r.exited;
      assert.ok(performance.now() - t0 < GRACE_MS + 1_000);
      assert.match(r.stderr(), new RegExp(`SIGTERM to process group ${ours.pid} \\(task 01REAPOURS\\)`));
      assert.match(r.stderr(), new RegExp(`SIGKILL to process group ${ours.pid} \\(task 01REAPOURS\\) after ${GRACE_MS} ms`));
      assert.deepEqual(runningMembers(removed.pid!).length > 0, true, 'a deleted group is left alone');
      assert.deepEqual(runningMembers(impostor.pid!).length > 0, true, 'a group not carrying the task id is left alone');
    });

    it('exits at once at EOF with nothing registered', async () => {
      const r = startReaper(kind);
      await until(() => catchesSignals(r.child.pid!), 5_000, 'reaper handlers installed');
      const t0 = performance.now();
      r.child.stdin!.end();
      const [code] = (await r.exited) as [number | null];
      assert.equal(code, 0);
      assert.ok(performance.now() - t0 < 500, `took ${Math.round(performance.now() - t0)} ms`);
    });
    });
  }

  describe('with a real `drover worker`', () => {
    let nextId = 1_100;
    function attempt(over: Partial<AssignedAttempt>): AssignedAttempt {
      const id = nextId++;
      return { attemptId: id, fencingToken: fencingToken(), taskId: `01REAPCLI${id}`, number: 1, command: null, args: [], script: null, interpreter: [], env: {}, timeoutMs: null, ...over };
    }

    interface Cli {
      child: ChildProcess;
      /** JSON log lines of the agent (and plain lines of its reaper) so far. */
      lines: () => string[];
      waitLog: (pred: (l: Record<string, unknown>) => boolean, timeoutMs?: number) => Promise<Record<string, unknown>>;
      exited: Promise<number | null>;
    }

    function startCli(server: FakeServer, extra: string[] = [], env: NodeJS.ProcessEnv = {}, opts: { detached?: boolean } = {}): Cli {
      const base: NodeJS.ProcessEnv = { ...process.env, DROVER_TOKEN: TOKEN, ...env };
      for (const k of Object.keys(base)) if (k.startsWith('DROVER_') && k !== 'DROVER_TOKEN' && !(k in env)) delete base[k];
      const args = [CLI_MAIN, 'worker', '--server', server.url, '--slots', '2', '--work-dir', path.join(tmp.dir, `cli-${nextId}`), '--log-level', 'info', ...extra];
      const child = spawn(process.execPath, args, { env: base, stdio: ['ignore', 'ignore', 'pipe'], detached: opts.detached ?? false });
      spawned.push(child);
      let buf = '';
      const all: string[] = [];
      let waiters: Array<() => void> = [];
      child.stderr!.setEncoding('utf8').on('data', (d: string) => {
        buf += d;
        const parts = buf.split('\n');
        buf = parts.pop()!;
        all.push(...parts);
        const w = waiters;
        waiters = [];
        w.forEach((f) => f());
      });
      const waitLog = async (pred: (l: Record<string, unknown>) => boolean, timeoutMs = 10_000) => {
        const deadline = Date.now() + timeoutMs;
        for (let i = 0; ; ) {
          for (; i < all.length; i++) {
            let l: Record<string, unknown>;
            try {
              l = JSON.parse(all[i]!) as Record<string, unknown>;
            } catch {
              continue;
            }
            if (pred(l)) return l;
          }
          if (Date.now() > deadline) throw new Error(`no such log line within ${timeoutMs} ms; got:\n${all.join('\n')}`);
          await new Promise<void>((r) => {
            const t = setTimeout(r, Math.max(1, deadline - Date.now()));
            waiters.push(() => {
              clearTimeout(t);
              r();
            });
          });
        }
      };
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      return { child, lines: () => all, waitLog, exited };
    }

    const stdoutOf = (msgs: AgentMessage[], id: number) =>
      msgs
        .filter((m): m is Extract<AgentMessage, { type: 'log' }> => m.type === 'log' && m.attemptId === id && m.stream === 'stdout')
        .map((l) => Buffer.from(l.data, 'base64').toString())
        .join('');

    it('tasks see neither DROVER_TOKEN nor other agent variables; --pass-env variables they do', async () => {
      const server = await FakeServer.start();
      const cli = startCli(server, ['--pass-env', 'DROVER_TEST_PASSME'], { DROVER_TEST_PASSME: 'handed over', DROVER_TEST_PRIVATE: 'agent only' });
      try {
        const conn = await server.nextConnection();
        conn.autoAck = true;
        await conn.welcome();
        const a = attempt({ command: 'env' });
        conn.send({ type: 'assign', attempt: a });
        assert.equal((await conn.next('exit')).outcome, 'succeeded');
        const lines = stdoutOf(conn.messages, a.attemptId).split('\n').filter(Boolean);
        const names = lines.map((l) => l.slice(0, l.indexOf('='))).sort();
        assert.deepEqual(names, ['DROVER_ATTEMPT', 'DROVER_OUTPUT', 'DROVER_OUTPUT_DIR', 'DROVER_TASK_ID', 'DROVER_TEST_PASSME', 'HOME', 'LANG', 'PATH']);
        assert.ok(lines.includes('DROVER_TEST_PASSME=handed over'));
        assert.ok(!lines.join('\n').includes(TOKEN));
      } finally {
        cli.child.kill('SIGKILL');
        await server.close();
      }
    });

    it('kill -9 of the agent: its reaper stops the attempt (which traps SIGTERM) within the reaper grace + 1 s', async () => {
      const server = await FakeServer.start();
      const cli = startCli(server);
      try {
        const conn = await server.nextConnection();
        await conn.welcome();
        await cli.waitLog((l) => l.msg === 'reaper started');
        const a = attempt({ command: 'sh', args: ['-c', 'trap "" TERM; sleep 60 & echo ready; wait'] });
        conn.send({ type: 'assign', attempt: a });
        const { pid } = await conn.next('started');
        await conn.next('log'); // "ready": the trap is set
        cli.child.kill('SIGKILL');
        await cli.exited;
        const took = await until(() => runningMembers(pid).length === 0, REAPER_MAX_GRACE_MS + 1_000, 'attempt group stopped after kill -9');
        assert.ok(took >= REAPER_MAX_GRACE_MS - 100, `stopped after ${Math.round(took)} ms; it ignores SIGTERM, so only the SIGKILL can have done it`);
        await until(() => cli.lines().some((l) => l.includes(`SIGKILL to process group ${pid} (task ${a.taskId})`)), 2_000, 'reaper said so');
      } finally {
        cli.child.kill('SIGKILL');
        await server.close();
      }
    });

    it('a reaper that dies is replaced (with the live groups) and a kill -9 of the agent is still covered', async () => {
      const server = await FakeServer.start();
      const cli = startCli(server);
      try {
        const conn = await server.nextConnection();
        await conn.welcome();
        const first = await cli.waitLog((l) => l.msg === 'reaper started');
        const a = attempt({ command: 'sh', args: ['-c', 'trap "" TERM; sleep 60 & echo ready; wait'] });
        conn.send({ type: 'assign', attempt: a });
        const { pid } = await conn.next('started');
        await conn.next('log'); // "ready": the trap is set
        process.kill(first.pid as number, 'SIGKILL');
        const warned = await cli.waitLog((l) => l.msg === 'the reaper exited; starting a new one');
        assert.equal(warned.pid, first.pid);
        assert.equal(warned.why, 'killed by SIGKILL');
        assert.equal(warned.groups, 1);
        // Killed as soon as the new reaper is announced, not waiting for it to be ready: the registry
        // is in its pipe before that line is logged (an earlier version wrote it a turn later and
        // lost the group when the agent died in between).
        const second = await cli.waitLog((l) => l.msg === 'reaper started' && l.pid !== first.pid);
        cli.child.kill('SIGKILL');
        await cli.exited;
        await until(() => runningMembers(pid).length === 0, REAPER_MAX_GRACE_MS + 1_000, 'attempt group stopped by the second reaper');
        await until(() => !isRunning(second.pid as number), 2_000, 'second reaper exited once the group was stopped');
      } finally {
        cli.child.kill('SIGKILL');
        await server.close();
      }
    });

    it('Ctrl-C to the whole process group: the reaper outlives the agent\'s drain, then exits with nothing to do', async () => {
      const server = await FakeServer.start();
      const cli = startCli(server, ['--drain-timeout', '200ms'], {}, { detached: true });
      try {
        const conn = await server.nextConnection();
        await conn.welcome();
        const reaper = await cli.waitLog((l) => l.msg === 'reaper started');
        await until(() => catchesSignals(reaper.pid as number), 5_000, 'reaper ready');
        await cli.waitLog((l) => l.msg === 'connected');
        const a = attempt({ command: 'sleep', args: ['30'] });
        conn.send({ type: 'assign', attempt: a });
        const { pid } = await conn.next('started');
        process.kill(-cli.child.pid!, 'SIGINT'); // what the terminal does on Ctrl-C
        const exit = await conn.next('exit', (m) => m.attemptId === a.attemptId);
        assert.equal(exit.outcome, 'lost');
        assert.equal(runningMembers(pid).length, 0);
        conn.send({ type: 'exit_ack', attemptId: a.attemptId });
        assert.equal(await cli.exited, 0);
        assert.ok(!cli.lines().some((l) => l.includes('the reaper exited')), 'the reaper died of the SIGINT');
        await until(() => !alive(reaper.pid as number), 5_000, 'reaper exits after the agent');
      } finally {
        try {
          process.kill(-cli.child.pid!, 'SIGKILL');
        } catch {
          // gone
        }
        await server.close();
      }
    });
  });
});

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
