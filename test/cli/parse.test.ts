/** Flag validation: every bad value is a UsageError whose message names the flag. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildDevConfig } from '../../src/cli/commands/dev.js';
import { buildSubmitRequest, idempotencyKeyOf, MISSING_COMMAND } from '../../src/cli/commands/submit.js';
import { buildListQuery } from '../../src/cli/commands/tasks.js';
import { parseTokenId } from '../../src/cli/commands/tokens.js';
import { buildWorkerConfig } from '../../src/cli/commands/worker.js';
import { DEFAULT_DRAIN_TIMEOUT_MS } from '../../src/worker/agent.js';
import {
  parseDbUrl,
  parseDurationFlag,
  parseHttpUrl,
  parseIntFlag,
  parseKeyValue,
  parseKeyValues,
  parseNumberFlag,
  parsePort,
  parseTaskId,
} from '../../src/cli/parse.js';
import { UsageError } from '../../src/cli/usage-error.js';

const usage = (re: RegExp) => (e: unknown) => e instanceof UsageError && re.test(e.message);

describe('K=V flags', () => {
  it('splits at the first "=" and keeps the rest of the value', () => {
    assert.deepEqual(parseKeyValue('--env', 'A=1'), ['A', '1']);
    assert.deepEqual(parseKeyValue('--env', 'URL=a=b=c'), ['URL', 'a=b=c']);
    assert.deepEqual(parseKeyValue('--env', 'EMPTY='), ['EMPTY', '']);
  });
  it('rejects a missing "=" and an empty key, naming the flag', () => {
    assert.throws(() => parseKeyValue('--env', 'NOEQUALS'), usage(/^invalid --env "NOEQUALS": expected KEY=VALUE$/));
    assert.throws(() => parseKeyValue('--label', '=v'), usage(/^invalid --label "=v": the key before "=" is empty$/));
  });
  it('collects repeated flags; the last value of a repeated key wins', () => {
    assert.deepEqual(parseKeyValues('--label', ['a=1', 'b=2', 'a=3']), { a: '3', b: '2' });
    assert.deepEqual(parseKeyValues('--label', undefined), {});
  });
});

describe('numbers and durations', () => {
  it('parses integers in range only', () => {
    assert.equal(parseIntFlag('--retries', '0', 0, 100), 0);
    assert.equal(parseIntFlag('--retries', '100', 0, 100), 100);
    assert.equal(parseIntFlag('--priority', '-5', -1000, 1000), -5);
    for (const bad of ['-1', '101', '1.5', '1e2', '0x10', '', 'abc', '99999999999999999999']) {
      assert.throws(() => parseIntFlag('--retries', bad, 0, 100), usage(/^invalid --retries ".*": expected an integer 0\.\.100$/), bad);
    }
  });
  it('parses decimal numbers in range', () => {
    assert.equal(parseNumberFlag('--retry-factor', '1.5', 1, 10), 1.5);
    for (const bad of ['0.5', '11', 'NaN', 'Infinity', '2x', '']) assert.throws(() => parseNumberFlag('--retry-factor', bad, 1, 10), usage(/--retry-factor/), bad);
  });
  it('parses durations with core/duration semantics', () => {
    assert.equal(parseDurationFlag('--timeout', '30s'), 30_000);
    assert.equal(parseDurationFlag('--timeout', '1h30m'), 5_400_000);
    // A bare number is seconds on the CLI (the API's bare number is milliseconds).
    assert.equal(parseDurationFlag('--timeout', '250'), 250_000);
    assert.equal(parseDurationFlag('--timeout', '5'), 5_000);
    assert.equal(parseDurationFlag('--timeout', '1.5'), 1_500);
    assert.equal(parseDurationFlag('--timeout', '500ms'), 500);
    for (const bad of ['5x', '', 's', '-1s', '1 h', '1.', '.5', '-5', '1e3']) assert.throws(() => parseDurationFlag('--timeout', bad), usage(/^invalid --timeout ".*": expected a duration/), bad);
    assert.throws(() => parseDurationFlag('--retry-cap', '8d', 7 * 86_400_000), usage(/--retry-cap "8d": at most/));
  });
});

describe('ids, ports, URLs', () => {
  it('accepts a ULID and rejects anything else', () => {
    assert.equal(parseTaskId('01JF0000000000000000000000'), '01JF0000000000000000000000');
    for (const bad of ['x', '01JF000000000000000000000', '01JF0000000000000000000000X', '01jf0000000000000000000000', '01JF00000000000000000000IL']) {
      assert.throws(() => parseTaskId(bad), usage(/^invalid task id ".*": expected a 26-character ULID$/), bad);
    }
  });
  it('checks ports and database URLs', () => {
    assert.equal(parsePort('--port', '7070'), 7070);
    assert.equal(parsePort('--port', '0'), 0);
    for (const bad of ['-1', '65536', 'http', '80.5']) assert.throws(() => parsePort('--port', bad), usage(/^invalid --port/), bad);
    assert.equal(parseDbUrl('--db', 'sqlite:./x.db'), 'sqlite:./x.db');
    assert.equal(parseDbUrl('--db', 'postgres://u@h/db'), 'postgres://u@h/db');
    assert.equal(parseDbUrl('--db', 'postgresql://u@h/db'), 'postgresql://u@h/db');
    for (const bad of ['sqlite:', 'mysql://x', './x.db', 'postgres:']) assert.throws(() => parseDbUrl('--db', bad), usage(/^invalid --db/), bad);
  });
  it('checks server URLs', () => {
    assert.equal(parseHttpUrl('--server', 'http://h:1/'), 'http://h:1');
    assert.throws(() => parseHttpUrl('--server', 'h:1x'), usage(/^invalid --server/));
    assert.throws(() => parseHttpUrl('--server', 'ftp://h'), usage(/http:\/\/ or https:\/\//));
  });
});

describe('submit request', () => {
  const noScript = () => assert.fail('no script expected');

  it('maps flags onto the API body', () => {
    const req = buildSubmitRequest(
      ['sh', '-c', 'echo hi'],
      { name: 'n', retries: '2', retryBase: '500ms', retryFactor: '3', retryCap: '1m', timeout: '30s', priority: '7', env: ['A=1'], label: ['team=x'] },
      noScript,
    );
    assert.deepEqual(req, {
      name: 'n',
      command: 'sh',
      args: ['-c', 'echo hi'],
      retry: { maxRetries: 2, baseDelay: 500, factor: 3, maxDelay: 60_000 },
      timeout: 30_000,
      priority: 7,
      env: { A: '1' },
      labels: { team: 'x' },
    });
  });
  it('--require becomes the placement map; a repeated key keeps its last value', () => {
    assert.deepEqual(buildSubmitRequest(['true'], { require: ['gpu=a100', 'zone=eu', 'gpu=h100'] }, noScript), { command: 'true', requires: { gpu: 'h100', zone: 'eu' } });
    assert.throws(() => buildSubmitRequest(['x'], { require: ['=v'] }, noScript), usage(/--require "=v"/));
  });
  it('the idempotency key: the flag if valid, else a fresh random one per submit', () => {
    assert.equal(idempotencyKeyOf({ idempotencyKey: 'job-42' }), 'job-42');
    assert.equal(idempotencyKeyOf({ idempotencyKey: '!~'.repeat(127) + '!' }).length, 255);
    const a = idempotencyKeyOf({});
    const b = idempotencyKeyOf({});
    assert.match(a, /^[\x21-\x7e]{1,255}$/);
    assert.notEqual(a, b);
    for (const bad of ['', 'a b', 'k'.repeat(256), 'ключ', 'tab\there']) assert.throws(() => idempotencyKeyOf({ idempotencyKey: bad }), usage(/^invalid --idempotency-key/));
  });
  it('sends only what was given (the server owns the defaults)', () => {
    assert.deepEqual(buildSubmitRequest(['true'], {}, noScript), { command: 'true' });
  });
  it('reads a script and splits the interpreter', () => {
    const req = buildSubmitRequest([], { script: 'job.py', interpreter: 'python3  -u' }, (f) => `# ${f}\nprint(1)\n`);
    assert.deepEqual(req, { name: 'job.py', script: '# job.py\nprint(1)\n', interpreter: ['python3', '-u'] });
  });
  it('rejects bad input naming the flag', () => {
    assert.throws(() => buildSubmitRequest([], {}, noScript), usage(new RegExp(`^${MISSING_COMMAND.replace(/[.[\]]/g, '\\$&')}$`)));
    assert.throws(() => buildSubmitRequest(['x'], { retries: '-1' }, noScript), usage(/--retries "-1"/));
    assert.throws(() => buildSubmitRequest(['x'], { retries: '1000' }, noScript), usage(/--retries "1000"/));
    assert.throws(() => buildSubmitRequest(['x'], { timeout: '5x' }, noScript), usage(/--timeout "5x"/));
    assert.throws(() => buildSubmitRequest(['x'], { timeout: '0' }, noScript), usage(/--timeout "0": must be greater than 0/));
    assert.throws(() => buildSubmitRequest(['x'], { env: ['NOEQUALS'] }, noScript), usage(/--env "NOEQUALS"/));
    assert.throws(() => buildSubmitRequest(['x'], { label: ['=v'] }, noScript), usage(/--label "=v"/));
    assert.throws(() => buildSubmitRequest(['x'], { name: '' }, noScript), usage(/--name/));
    assert.throws(() => buildSubmitRequest(['x'], { priority: '1001' }, noScript), usage(/--priority/));
    assert.throws(() => buildSubmitRequest(['x'], { script: 'a.sh' }, () => ''), usage(/--script and a command are exclusive/));
    assert.throws(() => buildSubmitRequest(['x'], { interpreter: 'python3' }, noScript), usage(/--interpreter needs --script/));
  });
});

describe('other commands', () => {
  it('ls query', () => {
    assert.deepEqual(buildListQuery({ state: 'failed', name: 'n', limit: '10' }), { state: 'failed', name: 'n', limit: 10 });
    assert.throws(() => buildListQuery({ state: 'done' }), usage(/--state "done"/));
    assert.throws(() => buildListQuery({ name: '' }), usage(/^invalid --name "": expected a name prefix$/));
    assert.throws(() => buildListQuery({ owner: '' }), usage(/^invalid --owner "": expected a user name$/));
    assert.throws(() => buildListQuery({ limit: '501' }), usage(/--limit "501"/));
    assert.deepEqual(buildListQuery({ state: 'failed', order: 'ended' }), { state: 'failed', order: 'ended' });
    assert.deepEqual(buildListQuery({ state: 'cancelled', order: 'ended' }), { state: 'cancelled', order: 'ended' });
    assert.deepEqual(buildListQuery({ order: 'created' }), { order: 'created' });
    assert.throws(() => buildListQuery({ order: 'newest' }), usage(/^invalid --order "newest": expected created or ended$/));
    assert.throws(() => buildListQuery({ order: 'ended' }), usage(/^--order ended needs --state failed or --state cancelled$/));
    assert.throws(() => buildListQuery({ state: 'succeeded', order: 'ended' }), usage(/^--order ended needs --state failed/));
  });
  it('worker config: flags, env fallbacks, defaults', () => {
    const cfg = buildWorkerConfig({ server: ['http://a:1/', 'http://b:2'], slots: '3', label: ['gpu=1'], id: 'w1', logLevel: 'info' }, undefined, { DROVER_TOKEN: 't' });
    assert.deepEqual(cfg.servers, ['http://a:1', 'http://b:2']);
    assert.equal(cfg.token, 't');
    assert.equal(cfg.slots, 3);
    assert.deepEqual(cfg.labels, { gpu: '1' });
    assert.match(cfg.workDir, /drover-worker-w1$/);
    const env = buildWorkerConfig({ logLevel: 'info' }, 'flag-token', { DROVER_URL: 'http://c:3', DROVER_TOKEN: 'env-token' });
    assert.deepEqual(env.servers, ['http://c:3']);
    assert.equal(env.token, 'flag-token');
    assert.ok(env.slots >= 1);
    assert.match(env.workDir, new RegExp(`drover-worker-${process.pid}$`));
    assert.throws(() => buildWorkerConfig({ logLevel: 'info' }, 't', {}), usage(/^missing --server URL/));
    assert.throws(() => buildWorkerConfig({ server: ['http://a'], logLevel: 'info' }, undefined, {}), usage(/^missing --token/));
    assert.throws(() => buildWorkerConfig({ server: ['http://a'], slots: '0', logLevel: 'info' }, 't', {}), usage(/--slots "0"/));
    assert.throws(() => buildWorkerConfig({ server: ['http://a'], id: '../x', logLevel: 'info' }, 't', {}), usage(/--id "..\/x"/));
  });
  it('worker config: --drain-timeout', () => {
    const base = { server: ['http://a'], logLevel: 'info' };
    assert.equal(buildWorkerConfig(base, 't', {}).drainTimeoutMs, DEFAULT_DRAIN_TIMEOUT_MS);
    assert.equal(buildWorkerConfig({ ...base, drainTimeout: '2m' }, 't', {}).drainTimeoutMs, 120_000);
    assert.equal(buildWorkerConfig({ ...base, drainTimeout: '0' }, 't', {}).drainTimeoutMs, 0);
    assert.throws(() => buildWorkerConfig({ ...base, drainTimeout: '30 secs' }, 't', {}), usage(/^invalid --drain-timeout "30 secs": expected a duration/));
    assert.throws(() => buildWorkerConfig({ ...base, drainTimeout: '-1s' }, 't', {}), usage(/^invalid --drain-timeout "-1s"/));
    assert.throws(() => buildWorkerConfig({ ...base, drainTimeout: '2d' }, 't', {}), usage(/^invalid --drain-timeout "2d": at most 86400000 ms$/));
  });
  it('worker config: DROVER_SPAWNER is native, node or unset', () => {
    const base = { server: ['http://a'], logLevel: 'info' };
    for (const v of ['native', 'node', undefined]) assert.ok(buildWorkerConfig(base, 't', v === undefined ? {} : { DROVER_SPAWNER: v }));
    assert.throws(() => buildWorkerConfig(base, 't', { DROVER_SPAWNER: 'nativ' }), usage(/^invalid DROVER_SPAWNER "nativ": expected native or node/));
    assert.throws(() => buildWorkerConfig(base, 't', { DROVER_SPAWNER: '' }), usage(/^invalid DROVER_SPAWNER ""/));
  });
  it('worker config: --executor', () => {
    const base = { server: ['http://a'], logLevel: 'info' };
    assert.equal(buildWorkerConfig(base, 't', {}).executor, 'process');
    assert.equal(buildWorkerConfig({ ...base, executor: 'process' }, 't', {}).executor, 'process');
    assert.equal(buildWorkerConfig({ ...base, executor: 'noop' }, 't', {}).executor, 'noop');
    assert.throws(() => buildWorkerConfig({ ...base, executor: 'mock' }, 't', {}), usage(/^invalid --executor "mock": expected one of process, noop$/));
    assert.throws(() => buildWorkerConfig({ ...base, executor: '' }, 't', {}), usage(/^invalid --executor "": expected one of process, noop$/));
    assert.throws(() => buildWorkerConfig({ ...base, executor: 'NOOP' }, 't', {}), usage(/--executor "NOOP"/));
  });
  it('dev config', () => {
    assert.deepEqual(buildDevConfig({ port: '7070', workers: '2', slots: '4', dir: './.drover', logLevel: 'warn' }, '/tmp/p'), {
      port: 7070,
      workers: 2,
      slots: 4,
      dir: '/tmp/p/.drover',
      logLevel: 'warn',
    });
    assert.throws(() => buildDevConfig({ port: '70700', workers: '2', slots: '4', dir: 'd', logLevel: 'warn' }, '/'), usage(/--port/));
    assert.throws(() => buildDevConfig({ port: '7070', workers: '-1', slots: '4', dir: 'd', logLevel: 'warn' }, '/'), usage(/--workers/));
  });
});

describe('token ids', () => {
  it('16 hex digits in any case, lowered; anything else names the rule', () => {
    assert.equal(parseTokenId('ABCDEF0123456789'), 'abcdef0123456789');
    assert.equal(parseTokenId(' abcdef0123456789 '), 'abcdef0123456789');
    for (const bad of ['', 'abc', 'abcdef012345678g', 'abcdef0123456789a', '../x']) {
      assert.throws(() => parseTokenId(bad), usage(/^invalid token id ".*": expected the 16 hex digits drover token ls shows/), bad);
    }
  });
});
