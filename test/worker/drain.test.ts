/**
 * Graceful drain (agent.drain(), SIGTERM on `drover worker`, the server's
 * `drain`) and the self-fencing report in `hello.killed`, against the fake
 * server.
 */
import assert from 'node:assert/strict';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { AssignedAttempt } from '../../src/core/protocol.js';
import type { AgentOptions } from '../../src/worker/agent.js';
import { FakeServer, TOKEN, type FakeConn } from './fake-server.js';
import { exists, tempDir, fencingToken } from './helpers.js';
import { connectAgent } from './agent-harness.js';

const CLI_MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

let nextId = 500;
function attempt(over: Partial<AssignedAttempt>): AssignedAttempt {
  const id = nextId++;
  return { attemptId: id, fencingToken: fencingToken(), taskId: `01TASK${id}`, number: 1, command: null, args: [], script: null, interpreter: [], env: {}, timeoutMs: null, ...over };
}


describe('worker drain and self-fencing', { timeout: 30_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  before(() => (tmp = tempDir('drover-drain-')));
  after(() => tmp.remove());

  const connect = (server: FakeServer, over: Partial<AgentOptions> = {}, welcome: Parameters<FakeConn['welcome']>[0] = {}) =>
    connectAgent(server, tmp.dir, { drainTimeoutMs: 10_000, backoff: { baseMs: 20, maxMs: 100 }, ...over }, welcome);

  function fifo(name: string): string {
    const p = path.join(tmp.dir, `${name}-${process.pid}-${nextId}`);
    execFileSync('mkfifo', [p]);
    return p;
  }

  it('drain(): running attempts finish and are reported; an assign while draining is reported lost at once', async () => {
    const server = await FakeServer.start();
    const { agent, conn } = await connect(server);
    try {
      conn.autoAck = true;
      const gate = fifo('gate');
      const a = attempt({ script: 'read line < "$GATE"; echo "done $line"', env: { GATE: gate } });
      conn.send({ type: 'assign', attempt: a });
      await conn.next('started', (m) => m.attemptId === a.attemptId);
      let drained = false;
      const drain = agent.drain().then(() => (drained = true));
      const draining = await conn.next('draining');
      // No new work: answered with exit lost right away, without running it.
      const b = attempt({ command: 'sh', args: ['-c', 'echo should not run'] });
      conn.send({ type: 'assign', attempt: b });
      const refused = await conn.next('exit', (m) => m.attemptId === b.attemptId);
      assert.deepEqual(refused, { type: 'exit', attemptId: b.attemptId, fencingToken: b.fencingToken, outcome: 'lost', exitCode: null, signal: null, error: 'worker is draining', durationMs: 0 });
      assert.ok(conn.messages.indexOf(draining) < conn.messages.indexOf(refused));
      assert.equal(conn.messages.some((m) => m.type === 'started' && m.attemptId === b.attemptId), false);
      // The running attempt goes on and finishes normally.
      await writeFile(gate, 'ok\n');
      const exit = await conn.next('exit', (m) => m.attemptId === a.attemptId);
      assert.equal(exit.outcome, 'succeeded');
      assert.equal(exit.exitCode, 0);
      // drain() waits for the server to have the exits.
      assert.equal(drained, false);
      conn.send({ type: 'exit_ack', attemptId: b.attemptId });
      conn.send({ type: 'exit_ack', attemptId: a.attemptId });
      await drain;
      await conn.closed;
      assert.equal(conn.messages.filter((m) => m.type === 'draining').length, 1);
      await agent.drain(); // idempotent
      await agent.close();
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('drain(): attempts still running at the drain timeout are stopped and reported lost', async () => {
    const server = await FakeServer.start();
    const { agent, conn } = await connect(server, { drainTimeoutMs: 300 });
    try {
      conn.autoAck = true;
      const a = attempt({ command: 'sleep', args: ['30'] });
      conn.send({ type: 'assign', attempt: a });
      const { pid } = await conn.next('started');
      const t0 = Date.now();
      const drain = agent.drain();
      await conn.next('draining');
      const exit = await conn.next('exit', (m) => m.attemptId === a.attemptId);
      const took = Date.now() - t0;
      assert.ok(took >= 280 && took < 5_000, `reported lost after ${took} ms`);
      assert.equal(exit.outcome, 'lost');
      assert.equal(exit.signal, 'SIGTERM');
      assert.equal(exit.error, 'worker drained: stopped after the 300 ms drain timeout');
      assert.equal(exists(-pid), false, 'process group gone');
      conn.send({ type: 'exit_ack', attemptId: a.attemptId });
      await drain;
      await conn.closed;
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('drain({now}) stops running attempts without waiting for the drain timeout', async () => {
    const server = await FakeServer.start();
    const { agent, conn } = await connect(server, { drainTimeoutMs: 20_000 });
    try {
      const a = attempt({ command: 'sleep', args: ['30'] });
      conn.send({ type: 'assign', attempt: a });
      const { pid } = await conn.next('started');
      const drain = agent.drain();
      await conn.next('draining');
      void agent.drain({ now: true });
      const exit = await conn.next('exit', (m) => m.attemptId === a.attemptId, 5_000);
      assert.equal(exit.outcome, 'lost');
      assert.match(exit.error ?? '', /^worker drained: stopped at once/);
      assert.equal(exists(-pid), false);
      conn.send({ type: 'exit_ack', attemptId: a.attemptId });
      await drain;
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('the server\'s drain: same, but the agent stays connected, and says draining again after a reconnect', async () => {
    const server = await FakeServer.start();
    const { agent, conn: c1 } = await connect(server, { drainTimeoutMs: 300 });
    try {
      c1.autoAck = true;
      const a = attempt({ command: 'sleep', args: ['30'] });
      c1.send({ type: 'assign', attempt: a });
      const { pid } = await c1.next('started');
      c1.send({ type: 'drain', reason: 'admin drained the worker' });
      await c1.next('draining');
      const exit = await c1.next('exit', (m) => m.attemptId === a.attemptId);
      assert.equal(exit.outcome, 'lost');
      assert.equal(exit.error, 'worker drained: stopped after the 300 ms drain timeout');
      assert.equal(exists(-pid), false);
      c1.send({ type: 'exit_ack', attemptId: a.attemptId });
      // Still connected and idle: heartbeats go on, new work is refused.
      await c1.next('heartbeat', (h) => h.running.length === 0);
      const b = attempt({ command: 'true' });
      c1.send({ type: 'assign', attempt: b });
      const refused = await c1.next('exit', (m) => m.attemptId === b.attemptId);
      assert.equal(refused.outcome, 'lost');
      assert.equal(refused.error, 'worker is draining');
      c1.send({ type: 'exit_ack', attemptId: b.attemptId });
      await c1.next('heartbeat', (h) => h.running.length === 0);
      assert.equal(c1.ws.readyState, c1.ws.OPEN);
      // After a reconnect: `draining` right after the hello.
      c1.ws.terminate();
      const c2 = await server.nextConnection();
      const hello = await c2.welcome();
      await c2.next('draining');
      assert.equal(c2.messages[0], hello);
      assert.equal(c2.messages[1]?.type, 'draining');
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('self-fencing: attempts the agent stopped for want of a server are listed in the next hello, once', async () => {
    const server = await FakeServer.start();
    const { agent, conn: c1, endOf } = await connect(server, {}, { heartbeatMs: 50, leaseMs: 400 });
    try {
      const a = attempt({ command: 'sleep', args: ['30'] });
      c1.send({ type: 'assign', attempt: a });
      const { pid } = await c1.next('started');
      server.refuseConnections = true;
      c1.ws.terminate();
      const end = await endOf(a.attemptId);
      assert.equal(end.reported, false);
      assert.equal(exists(-pid), false);
      server.refuseConnections = false;
      const c2 = await server.nextConnection();
      const hello = await c2.welcome();
      assert.deepEqual(hello.running, []);
      assert.equal(hello.killed?.length, 1);
      const [killed] = hello.killed!;
      assert.deepEqual({ ...killed, reason: '' }, { attemptId: a.attemptId, fencingToken: a.fencingToken, reason: '' });
      assert.match(killed!.reason, /^no server confirmed the lease for \d+ ms \(lease 400 ms\): stopped by the agent before it could expire \(self-fencing\)$/);
      // The welcome acknowledged them: the next hello does not repeat them.
      await c2.next('heartbeat');
      c2.ws.terminate();
      const c3 = await server.nextConnection();
      const hello3 = await c3.welcome();
      assert.equal(hello3.killed, undefined);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  describe('drover worker (the CLI) on SIGTERM', () => {
    function startCli(server: FakeServer, drainTimeout: string): { child: ChildProcess; ready: Promise<void>; exited: Promise<number | null>; stderr: () => string } {
      const env: NodeJS.ProcessEnv = { ...process.env, DROVER_TOKEN: TOKEN };
      for (const k of Object.keys(env)) if (k.startsWith('DROVER_') && k !== 'DROVER_TOKEN') delete env[k];
      const args = [CLI_MAIN, 'worker', '--server', server.url, '--slots', '1', '--work-dir', path.join(tmp.dir, `cli-${nextId}`), '--drain-timeout', drainTimeout, '--log-level', 'warn'];
      const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      let onReady!: () => void;
      const ready = new Promise<void>((r) => (onReady = r));
      child.stderr!.setEncoding('utf8').on('data', (d: string) => {
        err += d;
        if (/: \d+ slots?, servers? /.test(err)) onReady(); // printed once the signal handlers are in place
      });
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      return { child, ready, exited, stderr: () => err };
    }

    it('drains: reports the attempt lost after --drain-timeout, then exits 0', async () => {
      const server = await FakeServer.start();
      const cli = startCli(server, '300ms');
      try {
        const conn = await server.nextConnection();
        await conn.welcome();
        await cli.ready;
        const a = attempt({ command: 'sleep', args: ['30'] });
        conn.send({ type: 'assign', attempt: a });
        const { pid } = await conn.next('started');
        cli.child.kill('SIGTERM');
        await conn.next('draining');
        const exit = await conn.next('exit', (m) => m.attemptId === a.attemptId);
        assert.equal(exit.outcome, 'lost');
        assert.equal(exit.error, 'worker drained: stopped after the 300 ms drain timeout');
        assert.equal(exists(-pid), false);
        conn.send({ type: 'exit_ack', attemptId: a.attemptId });
        assert.equal(await cli.exited, 0, cli.stderr());
        await conn.closed;
      } finally {
        cli.child.kill('SIGKILL');
        await server.close();
      }
    });

    it('a second SIGTERM stops the running attempts at once (reported lost), then exits 0', async () => {
      const server = await FakeServer.start();
      const cli = startCli(server, '1m');
      try {
        const conn = await server.nextConnection();
        await conn.welcome();
        await cli.ready;
        const a = attempt({ command: 'sleep', args: ['30'] });
        conn.send({ type: 'assign', attempt: a });
        const { pid } = await conn.next('started');
        cli.child.kill('SIGTERM');
        await conn.next('draining');
        cli.child.kill('SIGTERM');
        const exit = await conn.next('exit', (m) => m.attemptId === a.attemptId, 5_000);
        assert.equal(exit.outcome, 'lost');
        assert.match(exit.error ?? '', /^worker drained: stopped at once/);
        assert.equal(exists(-pid), false);
        conn.send({ type: 'exit_ack', attemptId: a.attemptId });
        assert.equal(await cli.exited, 0, cli.stderr());
        assert.match(cli.stderr(), /SIGTERM again: stopping the running attempts now/);
      } finally {
        cli.child.kill('SIGKILL');
        await server.close();
      }
    });
  });
});
