import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { clampExitError, MAX_EXIT_ERROR_CHARS, PROTOCOL_VERSION, type AgentMessage, type AssignedAttempt } from '../../src/core/protocol.js';
import { startAgent, type AgentOptions } from '../../src/worker/agent.js';
import { deadUrl, FakeServer, TOKEN, type FakeConn } from './fake-server.js';
import { exists, tempDir, fencingToken } from './helpers.js';
import { connectAgent } from './agent-harness.js';
import { parseAgentFrame } from '../../src/server/worker-messages.js';

let nextId = 100;
function attempt(over: Partial<AssignedAttempt>): AssignedAttempt {
  const id = nextId++;
  return { attemptId: id, fencingToken: fencingToken(), taskId: `01TASK${id}`, number: 1, command: null, args: [], script: null, interpreter: [], env: {}, timeoutMs: null, ...over };
}

const decode = (logs: Array<Extract<AgentMessage, { type: 'log' }>>) => logs.map((l) => Buffer.from(l.data, 'base64').toString()).join('');


describe('worker agent', { timeout: 30_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  before(() => (tmp = tempDir('drover-agent-')));
  after(() => tmp.remove());

  const connect = (server: FakeServer, over: Partial<AgentOptions> = {}, welcome: Parameters<FakeConn['welcome']>[0] = {}) =>
    connectAgent(server, tmp.dir, { ...over }, welcome);

  it('says hello, runs an assignment and reports started, logs and exit in order', async () => {
    const server = await FakeServer.start();
    // The first URL refuses connections: the agent moves on to the next one.
    const dead = await deadUrl();
    const { agent, conn, hello } = await connect(server, { servers: [dead, server.url], labels: { zone: 'a' }, workerId: 'w-test' });
    try {
      assert.equal(conn.req.headers.authorization, `Bearer ${TOKEN}`);
      assert.deepEqual({ ...hello, hostname: 'x' }, { type: 'hello', workerId: 'w-test', hostname: 'x', slots: 2, labels: { zone: 'a' }, version: PROTOCOL_VERSION, running: [] });
      assert.equal(agent.workerId, 'w-test');
      conn.autoAck = true;
      const a = attempt({ command: 'sh', args: ['-c', 'echo "hi $DROVER_TASK_ID"; echo warn >&2'] });
      conn.send({ type: 'assign', attempt: a });
      const started = await conn.next('started');
      assert.equal(started.attemptId, a.attemptId);
      assert.equal(started.fencingToken, a.fencingToken);
      const exit = await conn.next('exit');
      assert.deepEqual({ ...exit, durationMs: 0 }, { type: 'exit', attemptId: a.attemptId, fencingToken: a.fencingToken, outcome: 'succeeded', exitCode: 0, signal: null, error: null, durationMs: 0 });
      // Every log message came between started and exit, with seqs 0..n-1.
      const iStarted = conn.messages.indexOf(started);
      const iExit = conn.messages.indexOf(exit);
      const logs = conn.messages.filter((m): m is Extract<AgentMessage, { type: 'log' }> => m.type === 'log');
      assert.ok(logs.every((l) => conn.messages.indexOf(l) > iStarted && conn.messages.indexOf(l) < iExit));
      assert.deepEqual(logs.map((l) => l.seq), logs.map((_, i) => i));
      assert.equal(decode(logs.filter((l) => l.stream === 'stdout')), `hi ${a.taskId}\n`);
      assert.equal(decode(logs.filter((l) => l.stream === 'stderr')), 'warn\n');
      // Until exit_ack the attempt is still held (its lease renewed); after it, not.
      await conn.next('heartbeat', (h) => h.running.includes(a.attemptId));
      conn.send({ type: 'exit_ack', attemptId: a.attemptId });
      await conn.next('heartbeat', (h) => h.running.length === 0);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('a short task\'s started and exit share one frame; a long task\'s started goes on its own, before its exit', async () => {
    const server = await FakeServer.start();
    const { agent, conn } = await connect(server);
    try {
      const short = attempt({ command: 'true' });
      conn.send({ type: 'assign', attempt: short });
      const exit = await conn.next('exit', (m) => m.attemptId === short.attemptId);
      const frame = conn.frames.find((f) => f.includes(exit))!;
      assert.deepEqual(
        frame.filter((m) => 'attemptId' in m && m.attemptId === short.attemptId).map((m) => m.type),
        ['started', 'exit'],
        'started waited for the exit and went in its frame',
      );
      const long = attempt({ command: 'sleep', args: ['30'] });
      conn.send({ type: 'assign', attempt: long });
      // Within STARTED_DELAY_MS of the spawn, with nothing else to send: its own frame, the task still running.
      const started = await conn.next('started', (m) => m.attemptId === long.attemptId);
      assert.ok(started.pid > 0);
      assert.equal(conn.messages.some((m) => m.type === 'exit' && m.attemptId === long.attemptId), false);
      conn.send({ type: 'cancel', attemptId: long.attemptId, reason: 'test' });
      await conn.next('exit', (m) => m.attemptId === long.attemptId);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('cancel kills the attempt and reports it cancelled', async () => {
    const server = await FakeServer.start();
    const { agent, conn } = await connect(server);
    try {
      conn.autoAck = true;
      const a = attempt({ command: 'sleep', args: ['100'] });
      conn.send({ type: 'assign', attempt: a });
      const { pid } = await conn.next('started');
      conn.send({ type: 'cancel', attemptId: a.attemptId, reason: 'user request' });
      const exit = await conn.next('exit');
      assert.equal(exit.outcome, 'cancelled');
      assert.equal(exit.signal, 'SIGTERM');
      assert.equal(exit.error, 'user request');
      assert.equal(exists(pid), false);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('keeps the attempt through reconnects and re-sends unacked logs and the unacked exit', async () => {
    const server = await FakeServer.start();
    const { agent, conn: c1 } = await connect(server);
    const gate = path.join(tmp.dir, `gate-${process.pid}`);
    execFileSync('mkfifo', [gate]);
    try {
      const a = attempt({ script: 'echo one; read line < "$GATE"; echo "two $line"', env: { GATE: gate } });
      c1.send({ type: 'assign', attempt: a });
      const first = await c1.next('log');
      assert.equal(first.seq, 0);
      // Not acked; the server drops the connection.
      c1.ws.terminate();

      const c2 = await server.nextConnection();
      const hello2 = await c2.welcome();
      assert.deepEqual(hello2.running, [{ attemptId: a.attemptId, fencingToken: a.fencingToken }]);
      const again = await c2.next('log');
      assert.deepEqual(again, first);
      c2.send({ type: 'ack', attemptId: a.attemptId, seq: 0 });
      await writeFile(gate, 'go\n'); // let the task finish
      const second = await c2.next('log');
      assert.equal(second.seq, 1);
      assert.equal(Buffer.from(second.data, 'base64').toString(), 'two go\n');
      const exit1 = await c2.next('exit');
      assert.equal(exit1.outcome, 'succeeded');
      // Neither log 1 nor the exit is acked; the connection closes.
      c2.ws.close();

      const c3 = await server.nextConnection();
      const hello3 = await c3.welcome();
      assert.deepEqual(hello3.running, [{ attemptId: a.attemptId, fencingToken: a.fencingToken }]);
      const resent = await c3.next('log');
      assert.deepEqual(resent, second); // seq 0 was acked: not sent again
      const exit2 = await c3.next('exit');
      assert.deepEqual(exit2, exit1);
      assert.ok(c3.messages.indexOf(resent) < c3.messages.indexOf(exit2));
      c3.send({ type: 'exit_ack', attemptId: a.attemptId });
      await c3.next('heartbeat', (h) => h.running.length === 0);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('a start failure naming a 4,096-character cwd is reported with its error cut to the protocol\'s limit (valid for the server)', async () => {
    const server = await FakeServer.start();
    const { agent, conn } = await connect(server);
    try {
      conn.autoAck = true;
      const cwd = '/' + 'c'.repeat(4095);
      const a = attempt({ command: 'true', cwd });
      conn.send({ type: 'assign', attempt: a });
      const exit = await conn.next('exit');
      assert.equal(exit.outcome, 'start_failed');
      assert.equal(exit.error!.length, MAX_EXIT_ERROR_CHARS);
      assert.ok(exit.error!.startsWith("cannot start: the task's cwd /ccc"), exit.error!.slice(0, 80));
      assert.ok(exit.error!.endsWith('…'));
      assert.ok(parseAgentFrame(Buffer.from(JSON.stringify(exit)), false).ok, 'the server would refuse it and close the connection');
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('clampExitError: within the limit as it is; past it, cut to the limit in code points, ending in …', () => {
    assert.equal(clampExitError(null), null);
    assert.equal(clampExitError('x'.repeat(MAX_EXIT_ERROR_CHARS)), 'x'.repeat(MAX_EXIT_ERROR_CHARS));
    const emoji = '😀'.repeat(MAX_EXIT_ERROR_CHARS); // twice as many UTF-16 units, as many code points
    assert.equal(clampExitError(emoji), emoji);
    const cut = clampExitError('😀'.repeat(MAX_EXIT_ERROR_CHARS + 1))!;
    assert.equal([...cut].length, MAX_EXIT_ERROR_CHARS);
    assert.ok(cut.endsWith('😀…'));
  });

  it('reports the outputs in its exit (valid for the server), and again after a reconnect until exit_ack', async () => {
    const server = await FakeServer.start();
    const { agent, conn: c1 } = await connect(server);
    try {
      c1.autoAck = true;
      const a = attempt({ script: 'printf "rows=42\\nnote=a=b \\001\\n" > "$DROVER_OUTPUT"' });
      c1.send({ type: 'assign', attempt: a });
      const exit1 = await c1.next('exit');
      assert.deepEqual({ ...exit1, durationMs: 0 }, { type: 'exit', attemptId: a.attemptId, fencingToken: a.fencingToken, outcome: 'succeeded', exitCode: 0, signal: null, error: null, durationMs: 0, outputs: { rows: '42', note: 'a=b \u0001' } });
      // What the agent sends is what the server accepts (server/worker-messages.ts).
      assert.ok(parseAgentFrame(Buffer.from(JSON.stringify(exit1)), false).ok);
      c1.ws.terminate();
      const c2 = await server.nextConnection();
      await c2.welcome();
      assert.deepEqual(await c2.next('exit'), exit1);
      c2.send({ type: 'exit_ack', attemptId: a.attemptId });
      await c2.next('heartbeat', (h) => h.running.length === 0);
      // A bad file: the exit says failed, names the line, keeps exit code 0 and carries no outputs.
      const b = attempt({ script: 'echo "rows 42" > "$DROVER_OUTPUT"' });
      c2.autoAck = true;
      c2.send({ type: 'assign', attempt: b });
      const bad = await c2.next('exit', (m) => m.attemptId === b.attemptId);
      assert.deepEqual({ ...bad, durationMs: 0 }, { type: 'exit', attemptId: b.attemptId, fencingToken: b.fencingToken, outcome: 'failed', exitCode: 0, signal: null, error: 'DROVER_OUTPUT line 1: expected KEY=VALUE', durationMs: 0 });
      assert.ok(parseAgentFrame(Buffer.from(JSON.stringify(bad)), false).ok);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('reject stops the attempt and reports nothing more about it', async () => {
    const server = await FakeServer.start();
    const { agent, conn, endOf } = await connect(server);
    try {
      const a = attempt({ command: 'sleep', args: ['100'] });
      conn.send({ type: 'assign', attempt: a });
      const { pid } = await conn.next('started');
      conn.send({ type: 'reject', attemptId: a.attemptId, reason: 'fenced' });
      const end = await endOf(a.attemptId);
      assert.equal(end.reported, false);
      assert.equal(exists(pid), false);
      await conn.next('heartbeat', (h) => h.running.length === 0);
      assert.equal(conn.messages.some((m) => m.type === 'exit'), false);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('kills attempts a welcome stop order (report: false) names, without reporting them', async () => {
    const server = await FakeServer.start();
    const { agent, conn: c1, endOf } = await connect(server);
    try {
      const a = attempt({ command: 'sleep', args: ['100'] });
      c1.send({ type: 'assign', attempt: a });
      const { pid } = await c1.next('started');
      c1.ws.terminate();
      const c2 = await server.nextConnection();
      const stop = [{ attemptId: a.attemptId, reason: 'attempt ended', report: false }];
      c2.stopOrders = stop; // repeated on every heartbeat_ack: harmless
      const hello = await c2.welcome({ stop });
      assert.deepEqual(hello.running, [{ attemptId: a.attemptId, fencingToken: a.fencingToken }]);
      const end = await endOf(a.attemptId);
      assert.equal(end.reported, false);
      assert.equal(exists(pid), false);
      await c2.next('heartbeat', (h) => h.running.length === 0);
      assert.equal(c2.messages.some((m) => m.type === 'exit' || m.type === 'log'), false);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('keeps heartbeating while a task prints at full speed', async () => {
    const server = await FakeServer.start();
    const { agent, conn } = await connect(server, {}, { heartbeatMs: 50 });
    try {
      conn.autoAck = true;
      const a = attempt({ command: 'yes', args: ['drover'], timeoutMs: 1_000 });
      conn.send({ type: 'assign', attempt: a });
      const started = await conn.next('started');
      const startedAt = Date.now();
      const beats: number[] = [];
      const onBeat = (data: unknown) => {
        const v = JSON.parse(String(data)) as AgentMessage | AgentMessage[];
        if ((Array.isArray(v) ? v : [v]).some((m) => m.type === 'heartbeat')) beats.push(Date.now());
      };
      conn.ws.on('message', onBeat);
      const exit = await conn.next('exit', undefined, 20_000);
      conn.ws.off('message', onBeat);
      assert.equal(exit.outcome, 'timed_out');
      const bytes = conn.messages.filter((m): m is Extract<AgentMessage, { type: 'log' }> => m.type === 'log').reduce((n, l) => n + Buffer.from(l.data, 'base64').length, 0);
      assert.ok(bytes > 5_000_000, `the task printed only ${bytes} bytes`);
      assert.ok(started.pid > 0);
      const during = beats.filter((t) => t - startedAt < 1_000);
      const gaps = during.slice(1).map((t, i) => t - during[i]!);
      assert.ok(during.length >= 8, `${during.length} heartbeats in 1 s at 50 ms (gaps ${gaps.join(',')})`);
      assert.ok(Math.max(...gaps) < 400, `heartbeat gaps ${gaps.join(',')}`);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('close() kills running attempts, reports them lost and closes the socket', async () => {
    const server = await FakeServer.start();
    const { agent, conn } = await connect(server);
    try {
      conn.autoAck = true;
      const a = attempt({ command: 'sh', args: ['-c', 'echo up; exec sleep 100'] });
      conn.send({ type: 'assign', attempt: a });
      const { pid } = await conn.next('started');
      await conn.next('log');
      await agent.close();
      await conn.closed;
      assert.equal(exists(pid), false);
      const exit = await conn.next('exit', undefined, 0);
      // lost: the task runs again elsewhere without using a retry.
      assert.equal(exit.outcome, 'lost');
      assert.equal(exit.error, 'worker shutting down');
      await agent.close(); // idempotent
    } finally {
      await server.close();
    }
  });

  it('startAgent rejects when no server welcomes it in time', async () => {
    const dead = await deadUrl();
    await assert.rejects(
      startAgent({ servers: [dead], token: TOKEN, slots: 1, workDir: tmp.dir, startTimeoutMs: 300, backoff: { baseMs: 20, maxMs: 100 } }),
      /no server welcomed worker .* within 300 ms \(last error: .*ECONNREFUSED/,
    );
    const server = await FakeServer.start();
    try {
      await assert.rejects(startAgent({ servers: [server.url], token: 'wrong', slots: 1, workDir: tmp.dir, startTimeoutMs: 300 }), /401/);
    } finally {
      await server.close();
    }
  });

  it('rejects bad options at once', async () => {
    await assert.rejects(startAgent({ servers: ['ftp://x'], token: TOKEN, slots: 1, workDir: tmp.dir }), /http\(s\):\/\/ or ws\(s\):\/\//);
    await assert.rejects(startAgent({ servers: ['http://127.0.0.1:1'], token: TOKEN, slots: 0, workDir: tmp.dir }), /slots/);
    await assert.rejects(startAgent({ servers: [], token: TOKEN, slots: 1, workDir: tmp.dir }), /no server/);
    await assert.rejects(startAgent({ servers: ['http://127.0.0.1:1'], token: TOKEN, slots: 1, workDir: tmp.dir, passEnv: ['DROVER_TOKEN'] }), /passEnv name "DROVER_TOKEN": DROVER_TOKEN is the worker token/);
    await assert.rejects(startAgent({ servers: ['http://127.0.0.1:1'], token: TOKEN, slots: 1, workDir: tmp.dir, passEnv: ['A-B'] }), /invalid passEnv name "A-B"/);
  });
});
