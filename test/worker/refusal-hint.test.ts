/** A connection the server refuses for good (token, URL): a hint naming the fix, logged once as an error. */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { startAgent } from '../../src/worker/agent.js';
import { refusalHint } from '../../src/worker/refusal-hint.js';
import { tempDir } from './helpers.js';

describe('refusalHint', () => {
  it('names the fix for 401, 403 and 404; nothing for what a retry can change', () => {
    assert.match(refusalHint('ws://h/v1/workers/connect: Unexpected server response: 401')!, /unknown or revoked/);
    assert.match(refusalHint('ws://h/v1/workers/connect: Unexpected server response: 403')!, /not a worker token/);
    assert.match(refusalHint('ws://h/v1/v1/workers/connect: Unexpected server response: 404')!, /without \/v1/);
    for (const r of ['ws://h: connect ECONNREFUSED 127.0.0.1:1', 'ws://h: Unexpected server response: 502', 'ws://h: closed (1006)']) assert.equal(refusalHint(r), null, r);
  });

  it('an agent whose token the server refuses logs one error saying so, and its retries at debug', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end('{"error":{"code":"forbidden","message":"only worker tokens"}}');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const tmp = tempDir('drover-refusal-');
    const lines: Array<{ level: string; msg: string; reason?: string }> = [];
    const log = (level: string) => (obj: object | string, msg?: string) => lines.push({ level, msg: msg ?? String(obj), ...(typeof obj === 'object' ? obj : {}) });
    const logger = { error: log('error'), warn: log('warn'), info: log('info'), debug: log('debug') };
    try {
      await assert.rejects(
        startAgent({ servers: [url], token: 'drv_user_token', slots: 1, workDir: tmp.dir, executor: 'noop', logger: logger as never, startTimeoutMs: 1_500, backoff: { baseMs: 50, maxMs: 100 } }),
      );
      const errors = lines.filter((l) => l.level === 'error' && /cannot connect/.test(l.msg));
      assert.equal(errors.length, 1, JSON.stringify(lines.map((l) => [l.level, l.msg])));
      assert.match(errors[0]!.msg, /^cannot connect: the token is not a worker token \(403\)/);
      assert.ok(lines.filter((l) => l.level === 'debug' && /could not connect/.test(l.msg)).length >= 1, 'the retries went on, quietly');
    } finally {
      server.close();
      tmp.remove();
    }
  });
});
