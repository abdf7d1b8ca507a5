import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { reconnectDelay } from '../../src/worker/reconnect-backoff.js';
import { workerConnectUrl } from '../../src/worker/server-url.js';

describe('server URL', () => {
  it('maps http(s) to ws(s) and appends the connect path, keeping a base path', () => {
    assert.equal(workerConnectUrl('http://127.0.0.1:7070'), 'ws://127.0.0.1:7070/v1/workers/connect');
    assert.equal(workerConnectUrl('https://drover.example/'), 'wss://drover.example/v1/workers/connect');
    assert.equal(workerConnectUrl('https://example.com/drover/?x=1'), 'wss://example.com/drover/v1/workers/connect');
    assert.equal(workerConnectUrl('ws://h:1'), 'ws://h:1/v1/workers/connect');
    assert.throws(() => workerConnectUrl('ftp://h'), /http\(s\)/);
    assert.throws(() => workerConnectUrl('not a url'));
  });
});

describe('reconnect backoff', () => {
  it('doubles from the base up to the cap, jittered within [d/2, d]', () => {
    const o = { baseMs: 100, maxMs: 5_000 };
    assert.equal(reconnectDelay(0, o, () => 0), 50);
    assert.equal(reconnectDelay(0, o, () => 1), 100);
    assert.equal(reconnectDelay(3, o, () => 1), 800);
    assert.equal(reconnectDelay(10, o, () => 1), 5_000);
    assert.equal(reconnectDelay(1000, o, () => 0), 2_500);
  });
});
