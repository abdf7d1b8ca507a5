/** The worker protocol's boundary: every agent frame is validated, and the reason names the field. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FRAME_BATCH_CHARS, LABEL_LIMITS, MAX_MESSAGES_PER_FRAME, packFrames, PROTOCOL_VERSION } from '../../src/core/protocol.js';
import { OUTPUT_LIMITS, outputsFileBytes } from '../../src/core/task-outputs.js';
import type { AgentMessage } from '../../src/core/protocol.js';
import { MAX_AGENT_FRAME_BYTES, parseAgentFrame } from '../../src/server/worker-messages.js';

const TOKEN = 'ab'.repeat(16);
const frame = (o: unknown) => parseAgentFrame(Buffer.from(JSON.stringify(o)), false);
const hello = (o: Record<string, unknown> = {}) => ({ type: 'hello', workerId: 'w1', hostname: 'h', slots: 2, labels: {}, version: PROTOCOL_VERSION, running: [], ...o });
const exit = (o: Record<string, unknown> = {}) => ({ type: 'exit', attemptId: 1, fencingToken: TOKEN, outcome: 'failed', exitCode: 1, signal: null, error: null, durationMs: 3, ...o });

function refused(o: unknown, field: RegExp): void {
  const r = frame(o);
  assert.equal(r.ok, false, JSON.stringify(o).slice(0, 80));
  if (!r.ok) assert.match(r.reason, field);
}

describe('parseAgentFrame', () => {
  it('accepts well-formed messages of every type', () => {
    for (const m of [
      hello({ labels: { gpu: 'yes', 'my key': 'v' }, running: [{ attemptId: 3, fencingToken: TOKEN }], killed: [{ attemptId: 4, fencingToken: TOKEN, reason: 'self-fencing' }] }),
      hello({ prefetch: 0 }),
      hello({ prefetch: 1024, draining: true }),
      { type: 'draining' },
      { type: 'prefetch', prefetch: 0 },
      { type: 'prefetch', prefetch: 1024 },
      { type: 'heartbeat', seq: 0, running: [1, 2] },
      { type: 'started', attemptId: 1, fencingToken: TOKEN, pid: 77 },
      { type: 'log', attemptId: 1, fencingToken: TOKEN, seq: 0, stream: 'stderr', data: Buffer.from('hi').toString('base64') },
      exit(),
    ]) {
      const r = frame(m);
      assert.ok(r.ok, JSON.stringify(r));
    }
  });

  it('refuses what is not a JSON object, binary frames and oversized frames', () => {
    assert.match((parseAgentFrame(Buffer.from('{nope'), false) as { reason: string }).reason, /not JSON/);
    assert.match((parseAgentFrame(Buffer.from('[1]'), false) as { reason: string }).reason, /^\[0\] frame is not a JSON object/);
    assert.match((parseAgentFrame(Buffer.from('{}'), true) as { reason: string }).reason, /binary/);
    assert.match((parseAgentFrame(Buffer.alloc(MAX_AGENT_FRAME_BYTES + 1, 32), false) as { reason: string }).reason, /over the/);
    refused({ type: 'launch-missiles' }, /^type: unknown message type/);
    refused({ notype: 1 }, /^type:/);
  });

  it('takes an array frame of 1 to 256 messages, in order, and refuses the whole frame for one bad message', () => {
    const two = frame([{ type: 'started', attemptId: 1, fencingToken: TOKEN, pid: 7 }, exit()]);
    assert.ok(two.ok);
    if (two.ok) assert.deepEqual(two.msgs.map((m) => m.type), ['started', 'exit']);
    assert.ok(frame(Array.from({ length: MAX_MESSAGES_PER_FRAME }, () => ({ type: 'draining' }))).ok);
    refused(Array.from({ length: MAX_MESSAGES_PER_FRAME + 1 }, () => ({ type: 'draining' })), /^frame: an array frame holds 1 to 256 messages, got 257/);
    refused([], /^frame: an array frame holds 1 to 256 messages, got 0/);
    refused([exit(), exit({ outcome: 'exploded' })], /^\[1\] exit\.outcome:/);
    refused([exit(), [exit()]], /^\[1\] frame is not a JSON object/);
  });

  it('packFrames: one message as itself, several as arrays, in order, within the bounds', () => {
    const j = (i: number) => JSON.stringify({ type: 'exit_ack', attemptId: i });
    assert.deepEqual(packFrames([j(1)]), [j(1)]);
    assert.deepEqual(packFrames([j(1), j(2)]), [`[${j(1)},${j(2)}]`]);
    const many = packFrames(Array.from({ length: 600 }, (_, i) => j(i)));
    assert.deepEqual(many.map((f) => (JSON.parse(f) as unknown[]).length), [256, 256, 88]);
    assert.deepEqual(many.flatMap((f) => (JSON.parse(f) as Array<{ attemptId: number }>).map((m) => m.attemptId)), Array.from({ length: 600 }, (_, i) => i));
    const big = JSON.stringify({ type: 'assign', pad: 'x'.repeat(FRAME_BATCH_CHARS) });
    assert.deepEqual(packFrames([j(1), big, j(2)]), [j(1), big, j(2)]);
    assert.deepEqual(packFrames([]), []);
  });

  it('names the field of a bad value', () => {
    refused({ type: 'heartbeat', seq: 'x', running: [] }, /^heartbeat\.seq:/);
    refused({ type: 'heartbeat', seq: 1, running: [0] }, /^heartbeat\.running\.0:/);
    refused({ type: 'heartbeat', seq: 1, running: Array.from({ length: 5000 }, (_, i) => i + 1) }, /^heartbeat\.running:/);
    refused(exit({ outcome: 'exploded' }), /^exit\.outcome:/);
    refused(exit({ fencingToken: 7 }), /^exit\.fencingToken:/);
    refused(exit({ fencingToken: 'guess' }), /^exit\.fencingToken:/);
    refused(exit({ error: 'x\u0000y' }), /^exit\.error:/);
    refused(exit({ error: 'e'.repeat(5000) }), /^exit\.error:/);
    refused(exit({ durationMs: -1 }), /^exit\.durationMs:/);
    refused({ type: 'log', attemptId: 1, fencingToken: TOKEN, seq: 0, stream: 'stdin', data: '' }, /^log\.stream:/);
    refused({ type: 'log', attemptId: 1, fencingToken: TOKEN, seq: 0, stream: 'stdout', data: 'not base64!' }, /^log\.data:/);
    refused({ type: 'log', attemptId: 1, fencingToken: TOKEN, seq: 0, stream: 'stdout', data: 'A'.repeat(100_000) }, /^log\.data:/);
    refused(hello({ workerId: '../etc' }), /^hello\.workerId:/);
    refused(hello({ slots: 0 }), /^hello\.slots:/);
    for (const prefetch of [-1, 1.5, 1025, '2']) refused(hello({ prefetch }), /^hello\.prefetch:/);
    for (const prefetch of [-1, 1.5, 1025, '2', null, 'auto']) refused({ type: 'prefetch', prefetch }, /^prefetch\.prefetch:/);
    refused({ type: 'prefetch' }, /^prefetch: must have required property 'prefetch'/);
    refused({ type: 'prefetch', prefetch: 2, slots: 4 }, /additional properties \(slots\)/);
    refused(hello({ extra: 1 }), /additional properties \(extra\)/);
    refused(hello({ labels: Object.fromEntries(Array.from({ length: LABEL_LIMITS.count + 1 }, (_, i) => [`k${i}`, 'v'])) }), /^hello\.labels:/);
    refused(hello({ labels: { k: 'v'.repeat(LABEL_LIMITS.valueLength + 1) } }), /^hello\.labels\.k:/);
    refused(hello({ running: [{ attemptId: 1, fencingToken: TOKEN, more: true }] }), /additional properties/);
    refused({ type: 'draining', now: true }, /additional properties/);
    assert.ok(frame({ type: 'started', attemptId: 1, fencingToken: TOKEN, pid: 0 }).ok, 'the noop executor starts no process: pid 0');
    refused({ type: 'started', attemptId: 1, fencingToken: TOKEN, pid: -1 }, /^started\.pid:/);
  });
});

describe('parseAgentFrame: the outputs of an exit (DROVER_OUTPUT), re-checked because a worker is not trusted', () => {
  const ok = (o: Record<string, unknown>) => exit({ outcome: 'succeeded', exitCode: 0, ...o });
  const accepted = (m: unknown) => {
    const r = frame(m);
    assert.ok(r.ok, r.ok ? '' : r.reason);
    return r.ok ? (r.msgs[0] as Extract<AgentMessage, { type: 'exit' }>) : null;
  };

  it('accepts what an agent sends: outputs of a succeeded exit, or none', () => {
    assert.deepEqual(accepted(ok({ outputs: { rows: '42', url: 'a=b', _x: '' } }))?.outputs, { rows: '42', url: 'a=b', _x: '' });
    assert.equal(accepted(ok({}))?.outputs, undefined);
    // __proto__ is a key like any other: an own property after JSON.parse, kept as data.
    const m = parseAgentFrame(Buffer.from(`{"type":"exit","attemptId":1,"fencingToken":"${TOKEN}","outcome":"succeeded","exitCode":0,"signal":null,"error":null,"durationMs":1,"outputs":{"__proto__":"p"}}`), false);
    assert.ok(m.ok);
    if (m.ok) assert.deepEqual(Object.entries((m.msgs[0] as { outputs: object }).outputs), [['__proto__', 'p']]);
  });

  it('a valid report of the largest size fits in a frame, even when JSON escapes every byte of it', () => {
    // 64 KiB of control characters: each is 6 bytes as JSON (\u0001).
    const outputs = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, '\u0001'.repeat(4090)]));
    assert.ok(outputsFileBytes(outputs) <= OUTPUT_LIMITS.maxBytes);
    const json = JSON.stringify(ok({ outputs }));
    assert.ok(json.length > 6 * 60_000 && json.length < MAX_AGENT_FRAME_BYTES, String(json.length));
    accepted(ok({ outputs }));
  });

  it('refuses outputs no DROVER_OUTPUT file could have given, naming exit.outputs and the reason', () => {
    refused(exit({ outcome: 'failed', outputs: { a: '1' } }), /^exit\.outputs: only an exit with outcome succeeded carries outputs \(got failed\)$/);
    refused(exit({ outcome: 'lost', exitCode: null, outputs: {} }), /^exit\.outputs: only an exit with outcome succeeded/);
    refused(ok({ outputs: 'rows=42' }), /^exit\.outputs: must be object$/);
    refused(ok({ outputs: ['a'] }), /^exit\.outputs: must be object$/);
    refused(ok({ outputs: { '1abc': 'x' } }), /^exit\.outputs: must NOT have additional properties \(1abc\)$/);
    refused(ok({ outputs: { 'a-b': 'x' } }), /^exit\.outputs: must NOT have additional properties \(a-b\)$/);
    refused(ok({ outputs: { ['K'.repeat(65)]: 'x' } }), /^exit\.outputs: must NOT have additional properties/);
    refused(ok({ outputs: { a: 1 } }), /^exit\.outputs\.a: must be string$/);
    refused(ok({ outputs: { a: null } }), /^exit\.outputs\.a: must be string$/);
    refused(ok({ outputs: { rows: '1', ROWS: '2' } }), /^exit\.outputs: key "ROWS" given twice \(keys are compared ignoring case\)$/);
    refused(ok({ outputs: { a: 'x\u0000y' } }), /^exit\.outputs: value of "a": contains a NUL character$/);
    refused(ok({ outputs: { a: 'two\nlines' } }), /^exit\.outputs: value of "a": contains a newline$/);
    refused(ok({ outputs: { a: 'x\ud800' } }), /^exit\.outputs: value of "a": not valid UTF-8 text/);
    refused(ok({ outputs: Object.fromEntries(Array.from({ length: 129 }, (_, i) => [`k${i}`, ''])) }), /^exit\.outputs: must NOT have more than 128 properties$/);
    refused(ok({ outputs: { a: 'x'.repeat(OUTPUT_LIMITS.maxBytes + 1) } }), /^exit\.outputs\.a: must NOT have more than 65536 characters$/);
    refused(ok({ outputs: { a: 'x'.repeat(40_000), b: 'y'.repeat(30_000) } }), /^exit\.outputs: 70006 bytes as KEY=VALUE lines, over the 65536-byte limit$/);
    // Multi-byte text counts in bytes: 40,000 characters of 2 bytes each.
    refused(ok({ outputs: { a: 'é'.repeat(40_000) } }), /^exit\.outputs: 80003 bytes as KEY=VALUE lines, over the 65536-byte limit$/);
  });
});
