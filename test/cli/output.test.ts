/** Formatting and the one-line error contract. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, ConnectionError } from '../../src/client/errors.js';
import type { Task } from '../../src/client/types.js';
import { waitOutcome } from '../../src/cli/follow-logs.js';
import { controlStripper, describeError, formatAge, formatExit, formatMs, formatTable, NOT_AUTHENTICATED, safeText } from '../../src/cli/output.js';
import { formatTaskDetail, formatTaskTable } from '../../src/cli/commands/tasks.js';
import { formatWorkerTable } from '../../src/cli/commands/workers.js';
import type { TaskDetail, WorkerInfo } from '../../src/client/types.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { makeSummary, makeTask } from './fake-api.js';

describe('formatting', () => {
  it('aligns table columns without trailing spaces', () => {
    assert.equal(formatTable(['A', 'BB', 'C'], [['xxx', 'y', 'z'], ['1', '2\n3', '']]), 'A    BB   C\nxxx  y    z\n1    2 3\n');
  });
  it('formats ages, exits and durations', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(formatAge('2025-12-31T23:59:15Z', now), '45s');
    assert.equal(formatAge('2025-12-31T23:48:00Z', now), '12m');
    assert.equal(formatAge('2025-12-31T21:00:00Z', now), '3h');
    assert.equal(formatAge('2025-12-27T00:00:00Z', now), '5d');
    assert.equal(formatAge(null, now), '-');
    assert.equal(formatExit({ exitCode: 3, signal: null }), '3');
    assert.equal(formatExit({ exitCode: null, signal: 'SIGKILL' }), 'SIGKILL');
    assert.equal(formatExit(null), '-');
    assert.equal(formatMs(250), '250ms');
    assert.equal(formatMs(1500), '1.5s');
    assert.equal(formatMs(3_600_000), '1h');
    assert.equal(formatMs(5_400_000), '1h30m');
  });
});

describe('describeError', () => {
  it('bad input exits 2; everything else 1', () => {
    assert.deepEqual(describeError(new UsageError('invalid --x "y": z')), { message: 'invalid --x "y": z', exitCode: 2 });
    assert.deepEqual(describeError(new ApiError(400, { code: 'invalid_input', message: 'm', field: 'timeout', reason: 'not a duration' })), {
      message: 'invalid timeout: not a duration',
      exitCode: 2,
    });
    assert.deepEqual(describeError(new ConnectionError('http://h:1', 'ECONNREFUSED')), { message: 'cannot reach Drover at http://h:1: ECONNREFUSED', exitCode: 1 });
    assert.deepEqual(describeError(new ApiError(409, { code: 'conflict', message: 'task ended' })), { message: 'conflict: task ended', exitCode: 1 });
  });
  it('words a 401 by whether a token was sent', () => {
    const e401 = new ApiError(401, { code: 'unauthorized', message: 'invalid or revoked token' });
    assert.equal(describeError(e401, null).message, NOT_AUTHENTICATED);
    const noToken = { url: 'http://h', token: null, urlSource: 'default', tokenSource: null, credentialsPath: null, urlPath: null, anyCredentials: false } as const;
    assert.equal(describeError(e401, noToken).message, NOT_AUTHENTICATED);
    const env = { ...noToken, token: 't', tokenSource: 'env' } as const;
    assert.equal(describeError(e401, env).message, 'not authenticated: http://h rejected the token from DROVER_TOKEN (invalid or revoked token)');
    assert.match(NOT_AUTHENTICATED, /drover login URL.*drover dev.*DROVER_URL and DROVER_TOKEN/);
  });
  it('a connection error names where the url came from, and how to connect when nothing was configured', () => {
    const err = new ConnectionError('http://127.0.0.1:7070', 'ECONNREFUSED');
    const none = { url: 'http://127.0.0.1:7070', token: null, urlSource: 'default', tokenSource: null, credentialsPath: null, urlPath: null, anyCredentials: false } as const;
    assert.match(describeError(err, none).message, /^cannot reach Drover at http:\/\/127\.0\.0\.1:7070 \(url from the default: .*\): ECONNREFUSED; no credentials found: run `drover login URL`/);
    const env = { ...none, urlSource: 'env', anyCredentials: true } as const;
    assert.equal(describeError(err, env).message, 'cannot reach Drover at http://127.0.0.1:7070 (url from DROVER_URL): ECONNREFUSED');
    const file = { ...none, urlSource: 'user', urlPath: '/home/u/.config/drover/credentials.json', anyCredentials: true } as const;
    assert.match(describeError(err, file).message, /\(url from \/home\/u\/\.config\/drover\/credentials\.json\)/);
  });
});

describe('waitOutcome', () => {
  const task = (over: Record<string, unknown>) => makeTask(over) as unknown as Task;
  const result = (r: Record<string, unknown>) => ({ outcome: 'failed', attempt: 1, exitCode: null, signal: null, error: null, durationMs: 1, ...r });
  it('mirrors the task with shell conventions', () => {
    assert.deepEqual(waitOutcome(task({ state: 'succeeded', result: result({ outcome: 'succeeded', exitCode: 0 }) })), { exitCode: 0, message: null });
    const plain = waitOutcome(task({ state: 'failed', attempts: 4, result: result({ exitCode: 42, durationMs: 1500 }) }));
    assert.equal(plain.exitCode, 42);
    assert.match(plain.message!, /^task \w+ failed: exit code 42 \(attempts 4, duration 1\.5s\)$/);
    assert.equal(waitOutcome(task({ state: 'failed', result: result({ exitCode: 300 }) })).exitCode, 255);
    const t = waitOutcome(task({ state: 'failed', result: result({ outcome: 'timed_out', signal: 'SIGTERM', error: 'timed out after 5000 ms' }) }));
    assert.equal(t.exitCode, 124, 'a timeout is 124 (GNU timeout), never 128+SIGTERM');
    assert.match(t.message!, /failed: timed out after 5000 ms \(attempts \d+, duration 1ms\)$/);
    assert.equal(waitOutcome(task({ state: 'failed', result: result({ signal: 'SIGKILL' }) })).exitCode, 137);
    assert.equal(waitOutcome(task({ state: 'failed', result: result({ signal: 'SIGTERM' }) })).exitCode, 143);
    assert.equal(waitOutcome(task({ state: 'failed', result: result({ signal: 'SIGNOPE' }) })).exitCode, 1, 'an unknown signal name: 1');
    const spawnFail = waitOutcome(task({ state: 'failed', result: result({ outcome: 'start_failed', error: 'cannot start nope: not found in PATH=/usr/bin' }) }));
    assert.equal(spawnFail.exitCode, 1);
    assert.match(spawnFail.message!, /failed: start failed: cannot start nope: not found in PATH=\/usr\/bin \(attempts/);
    assert.equal(waitOutcome(task({ state: 'failed', result: result({ outcome: 'lost', error: 'worker w1 lost' }) })).exitCode, 1);
    assert.equal(waitOutcome(task({ state: 'cancelled' })).exitCode, 1);
  });
});

/** Every byte a terminal acts on: C0 (except \n, \t, which tables fold), DEL, ESC; and C1 / bidi code points. */
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('safeText: task data made inert for a terminal', () => {
  it('escapes C0 controls, DEL, ESC sequences and C1 controls visibly', () => {
    assert.equal(safeText('red \x1b[31mX\x1b[0m'), 'red \\x1b[31mX\\x1b[0m');
    assert.equal(safeText('title \x1b]0;pwned\x07'), 'title \\x1b]0;pwned\\x07');
    assert.equal(safeText('a\nb\tc\rd'), 'a\\nb\\tc\\rd');
    assert.equal(safeText('\x00\x08\x7f'), '\\x00\\x08\\x7f');
    assert.equal(safeText('c1 \u009b31m \u0085'), 'c1 \\x9b31m \\x85');
  });
  it('escapes bidirectional overrides, keeps other text (UTF-8, NBSP, emoji) as is', () => {
    assert.equal(safeText('abc\u202edcba'), 'abc\\u202edcba');
    assert.equal(safeText('\u2066x\u2069'), '\\u2066x\\u2069');
    assert.equal(safeText('héllo wörld\u00a0✓ 🚀 日本'), 'héllo wörld\u00a0✓ 🚀 日本');
  });
  it('tables escape every cell (widths count the escaped text)', () => {
    const t = formatTable(['A', 'B'], [['\x1b[2Jx', 'y'], ['z', '\u009b1m']]);
    assert.equal(t, 'A         B\n\\x1b[2Jx  y\nz         \\x9b1m\n');
    assert.doesNotMatch(t, RAW_CONTROL);
  });
  it('ls, show and workers print task and worker data escaped', () => {
    const evil = 'job\x1b]0;owned\x07\x1b[2J\u009b31m\u202e';
    const task = makeTask({ name: evil, owner: `bob\x1b[1m`, command: `rm\x1b[8m`, args: ['a\nb'], labels: { ['k\x1b']: 'v\x07' }, requires: { gpu: '\x1b[5m' }, env: { ['E\x1b']: 'x' } });
    task.result = { outcome: 'failed', attempt: 1, exitCode: 1, signal: null, error: 'bad\x1b[31m', durationMs: 1 } as never;
    const ls = formatTaskTable([makeSummary({ name: evil, workerId: 'w\x1b[1m', error: 'bad\x1b[31m' }) as never], { wide: true });
    assert.doesNotMatch(ls, RAW_CONTROL);
    assert.match(ls, /job\\x1b\]0;owned\\x07\\x1b\[2J/);
    const detail: TaskDetail = {
      task: task as never,
      attempts: [{ id: 1, number: 1, workerId: 'w\x1b[1m', state: 'failed', startedAt: task.createdAt, endedAt: null, exitCode: 1, signal: null, error: 'e\x1b[2K', durationMs: 1 }],
      events: [{ id: 1, from: 'running', to: 'failed', reason: 'attempt_failed', actor: 'worker:\x1b[3m', at: task.createdAt, detail: { msg: 'x\x1b[4m\u009b' } }],
    };
    const show = formatTaskDetail(detail);
    assert.doesNotMatch(show, RAW_CONTROL);
    assert.match(show, /^name:\s+job\\x1b/m);
    assert.match(show, /^requires:\s+gpu=\\x1b\[5m$/m);
    // A newline in an argument stays on the field's line.
    assert.match(show, /^run:\s+'rm\\x1b\[8m' 'a\\nb'$/m);
    // No outputs, no OUTPUTS section; with outputs, one KEY=VALUE a line, each value escaped.
    assert.doesNotMatch(show, /OUTPUTS/);
    const withOutputs = formatTaskDetail({ ...detail, task: { ...detail.task, outputs: { rows: '42', EVIL: 'v\x1b[2J\r=x\u202e' } } });
    assert.doesNotMatch(withOutputs, RAW_CONTROL);
    assert.match(withOutputs, /\nOUTPUTS\nrows=42\nEVIL=v\\x1b\[2J\\r=x\\u202e\n\nATTEMPTS\n/);
    const workers: WorkerInfo[] = [
      {
        id: 'w1',
        hostname: 'h\x1b[31m',
        slots: 1,
        slotsUsed: 1,
        labels: { ['z\x1b']: '1' },
        state: 'connected',
        connectedAt: task.createdAt,
        lastSeenAt: task.createdAt,
        drainingAt: null,
        runningAttempts: [{ attemptId: 1, taskId: task.id, taskName: evil, startedAt: task.createdAt }],
      },
    ];
    assert.doesNotMatch(formatWorkerTable(workers), RAW_CONTROL);
  });
});

describe('controlStripper: a task\'s output on its way to a terminal', () => {
  const strip = (...chunks: Array<string | Buffer>) => {
    const f = controlStripper();
    const out = chunks.map((c) => Buffer.from(f.write(typeof c === 'string' ? Buffer.from(c, 'latin1') : c)));
    out.push(Buffer.from(f.end()));
    return Buffer.concat(out);
  };
  const text = (...chunks: Array<string | Buffer>) => strip(...chunks).toString('utf8');

  it('removes CSI, OSC, DCS and two-byte ESC sequences, keeps the text around them', () => {
    assert.equal(text('\x1b[1;31mred\x1b[0m plain\n'), 'red plain\n');
    assert.equal(text('a\x1b]0;window title\x07b\n'), 'ab\n');
    assert.equal(text('a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b'), 'alinkb');
    assert.equal(text('a\x1bPq#0;2;0;0;0\x1b\\b'), 'ab');
    assert.equal(text('a\x1b7b\x1b8c\x1b(Bd'), 'abcd');
    assert.equal(text('\x1b[?1049h\x1b[2J\x1b[Hscreen'), 'screen');
  });
  it('drops other controls except newline and tab', () => {
    assert.equal(text('a\rb\x07c\x08d\x7fe\tf\ng\x00'), 'abcde\tf\ng');
  });
  it('removes UTF-8-encoded C1 controls (CSI U+009B, OSC U+009D ... ST U+009C) but keeps U+0080..U+00FF text', () => {
    assert.equal(strip(Buffer.from('a\u009b31mb\u009d0;t\u009cc\u0085d', 'utf8')).toString('utf8'), 'abcd');
    assert.equal(text(Buffer.from('nbsp\u00a0é ü ¿ 日本 🚀\n', 'utf8')), 'nbsp\u00a0é ü ¿ 日本 🚀\n');
  });
  it('holds state across chunk boundaries, byte by byte', () => {
    const input = Buffer.from('x\x1b[38;5;196my\x1b]0;t\x07z\u009b1mé\n', 'utf8');
    const chunks = [...input].map((b) => Buffer.from([b]));
    assert.equal(strip(...chunks).toString('utf8'), 'xyzé\n');
    assert.equal(strip(Buffer.from([0x61, 0xc2]), Buffer.from([0xa0, 0x62])).toString('utf8'), 'a\u00a0b');
    assert.equal(strip(Buffer.from([0x61, 0xc2])).toString('latin1'), 'a\xc2', 'a lone lead byte at the end is text, kept');
  });
  it('a sequence broken by text is not allowed to swallow it', () => {
    assert.equal(text('\x1b[12\nnext line\n'), '\nnext line\n');
    assert.equal(text('\x1b]0;never terminated\nthe rest\n'), '\nthe rest\n');
    const long = '\x1b]' + 'x'.repeat(5000) + 'visible';
    assert.ok(text(long).endsWith('visible'));
  });
});
