/**
 * The peer table behind PostgreSQL's hint skipping (src/store/postgres/signal-peers.ts),
 * pure, with the clock passed in.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PEER_TTL_MS, PRESENCE_MS, PRESENCE_PAYLOAD, presenceFromPayload, SignalPeers } from '../../src/store/postgres/signal-peers.js';

const T = 1_000_000;

describe('signal peers', () => {
  it('no peer at first', () => {
    const p = new SignalPeers();
    assert.equal(p.any(T), false);
    assert.equal(p.count(T), 0);
  });

  it('a `here` makes a peer, and asks for an answer only when the peer is new', () => {
    const p = new SignalPeers();
    assert.equal(p.heard(41, 'here', T), true);
    assert.equal(p.any(T), true);
    assert.equal(p.heard(41, 'here', T + PRESENCE_MS), false, 'a known peer repeating itself gets no answer');
    assert.equal(p.heard(42, 'here', T + PRESENCE_MS), true);
    assert.equal(p.count(T + PRESENCE_MS), 2);
  });

  it('a peer counts until PEER_TTL_MS after its last `here`, and is new again after that', () => {
    const p = new SignalPeers();
    p.heard(41, 'here', T);
    assert.equal(p.any(T + PEER_TTL_MS - 1), true);
    assert.equal(p.any(T + PEER_TTL_MS), false);
    assert.equal(p.heard(41, 'here', T + PEER_TTL_MS + 1), true, 'an expired peer heard again is answered');
  });

  it('its renewals keep it: `here` every PRESENCE_MS never expires', () => {
    const p = new SignalPeers();
    for (let t = T; t < T + 10 * PEER_TTL_MS; t += PRESENCE_MS) {
      p.heard(41, 'here', t);
      assert.equal(p.any(t + PRESENCE_MS - 1), true);
    }
    assert.ok(PEER_TTL_MS > 3 * PRESENCE_MS, 'three missed periods before a peer is dropped');
  });

  it('a `bye` removes that peer at once, and only that one', () => {
    const p = new SignalPeers();
    p.heard(41, 'here', T);
    p.heard(42, 'here', T);
    assert.equal(p.heard(41, 'bye', T + 1), false);
    assert.equal(p.count(T + 1), 1);
    p.heard(42, 'bye', T + 2);
    assert.equal(p.any(T + 2), false);
    assert.equal(p.heard(43, 'bye', T + 3), false, 'a bye from an unknown backend changes nothing');
    assert.equal(p.any(T + 3), false);
  });

  it('a shorter TTL (tests) is honoured', () => {
    const p = new SignalPeers(300);
    p.heard(41, 'here', T);
    assert.equal(p.any(T + 299), true);
    assert.equal(p.any(T + 300), false);
  });
});

describe('presence payloads', () => {
  it('reads its own payloads back', () => {
    assert.equal(presenceFromPayload(PRESENCE_PAYLOAD.here), 'here');
    assert.equal(presenceFromPayload(PRESENCE_PAYLOAD.bye), 'bye');
  });

  it('anything else on the channel is not a presence', () => {
    for (const x of [
      undefined,
      '',
      '{"kind":"wake"}',
      '{"kind":"task","taskId":"t"}',
      '{"kind":"peer"}',
      '{"kind":"peer","state":"gone"}',
      '{"kind":"peer","state":"here"',
      '{"kind":"peer","state":["here"]}',
      'here',
    ]) {
      assert.equal(presenceFromPayload(x), null, String(x));
    }
  });
});
