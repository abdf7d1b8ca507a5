/** `drover worker` flags that belong to the agent: --pass-env, --label, --max-log, --prefetch. (The rest is covered by test/cli/parse.test.ts.) */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildWorkerConfig } from '../../src/cli/commands/worker.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { DEFAULT_MAX_LOG_BYTES } from '../../src/core/protocol.js';

const base = { server: ['http://a'], logLevel: 'info' };
const usage = (re: RegExp) => (err: unknown) => err instanceof UsageError && re.test(err.message);

describe('worker config: --pass-env', () => {
  it('defaults to nothing passed on', () => {
    assert.deepEqual(buildWorkerConfig(base, 't', {}).passEnv, []);
  });

  it('keeps valid names in order, once each', () => {
    assert.deepEqual(buildWorkerConfig({ ...base, passEnv: ['HTTP_PROXY', '_X1', 'HTTP_PROXY', 'lower'] }, 't', {}).passEnv, ['HTTP_PROXY', '_X1', 'lower']);
  });

  it('refuses a name that is not an environment variable name, naming --pass-env', () => {
    for (const bad of ['', '1ABC', 'A-B', 'A=B', 'A B', 'É']) {
      assert.throws(() => buildWorkerConfig({ ...base, passEnv: [bad] }, 't', {}), usage(new RegExp(`^invalid --pass-env "${bad}": expected an environment variable name`)), bad);
    }
  });

  it('refuses DROVER_TOKEN with a clear reason', () => {
    assert.throws(
      () => buildWorkerConfig({ ...base, passEnv: ['PATH', 'DROVER_TOKEN'] }, 't', { DROVER_TOKEN: 't' }),
      usage(/^invalid --pass-env "DROVER_TOKEN": DROVER_TOKEN is the worker token and is never passed to tasks$/),
    );
  });
});

describe('drover worker --label bounds', () => {
  it('refuses more labels, or longer ones, than a hello may carry, naming --label', () => {
    const many = Array.from({ length: 65 }, (_, i) => `k${i}=v`);
    assert.throws(() => buildWorkerConfig({ server: ['http://127.0.0.1:1'], label: many, logLevel: 'info' }, 'tok', {}), /too many --label flags: at most 64/);
    assert.throws(() => buildWorkerConfig({ server: ['http://127.0.0.1:1'], label: [`${'k'.repeat(257)}=v`], logLevel: 'info' }, 'tok', {}), /invalid --label .*over 256 characters/);
    assert.throws(() => buildWorkerConfig({ server: ['http://127.0.0.1:1'], label: [`k=${'v'.repeat(1025)}`], logLevel: 'info' }, 'tok', {}), /invalid --label "k=\.\.\.": the value is over 1024/);
    assert.deepEqual(buildWorkerConfig({ server: ['http://127.0.0.1:1'], label: ['my key=a b'], logLevel: 'info' }, 'tok', {}).labels, { 'my key': 'a b' });
  });
});

describe('worker config: --max-log', () => {
  it('defaults to DEFAULT_MAX_LOG_BYTES; takes a size with a unit, a bare number as bytes', () => {
    assert.equal(buildWorkerConfig(base, 't', {}).maxLogBytes, DEFAULT_MAX_LOG_BYTES);
    assert.equal(buildWorkerConfig({ ...base, maxLog: '1GiB' }, 't', {}).maxLogBytes, 1024 ** 3);
    assert.equal(buildWorkerConfig({ ...base, maxLog: '512k' }, 't', {}).maxLogBytes, 512 * 1024);
    assert.equal(buildWorkerConfig({ ...base, maxLog: '2048' }, 't', {}).maxLogBytes, 2048);
  });
  it('refuses what is not a size, or outside 1 KiB..64 GiB, naming --max-log', () => {
    for (const bad of ['', 'lots', '1.5MiB', '-1', '10TB', '1e6']) {
      assert.throws(() => buildWorkerConfig({ ...base, maxLog: bad }, 't', {}), usage(/^invalid --max-log ".*": expected a size such as 100MiB/), bad);
    }
    for (const bad of ['1023', '65GiB']) {
      assert.throws(() => buildWorkerConfig({ ...base, maxLog: bad }, 't', {}), usage(/^invalid --max-log ".*": must be 1024\.\.68719476736 bytes$/), bad);
    }
  });
});

describe('worker config: --prefetch', () => {
  it('defaults to auto; takes auto or an integer 0..1024', () => {
    assert.equal(buildWorkerConfig(base, 't', {}).prefetch, 'auto');
    assert.equal(buildWorkerConfig({ ...base, prefetch: 'auto' }, 't', {}).prefetch, 'auto');
    assert.equal(buildWorkerConfig({ ...base, prefetch: ' 7 ' }, 't', {}).prefetch, 7);
    assert.equal(buildWorkerConfig({ ...base, prefetch: '20' }, 't', {}).prefetch, 20);
    assert.equal(buildWorkerConfig({ ...base, prefetch: '0' }, 't', {}).prefetch, 0);
    assert.equal(buildWorkerConfig({ ...base, prefetch: '1024' }, 't', {}).prefetch, 1024);
  });
  it('refuses what is neither auto nor an integer 0..1024, naming --prefetch', () => {
    for (const bad of ['', 'many', 'AUTO', 'auto ', '-1', '1.5', '1025', '1e3', '9007199254740993']) {
      assert.throws(() => buildWorkerConfig({ ...base, prefetch: bad }, 't', {}), usage(/^invalid --prefetch ".*": expected auto or an integer 0\.\.1024$/), bad);
    }
  });
});
