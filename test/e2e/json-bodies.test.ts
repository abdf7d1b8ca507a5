/**
 * JSON bodies through a real `drover server` (server/json-body.ts replaces
 * Fastify's parser): a broken body is a 400 naming `body`, where it breaks and
 * why, prototype poisoning is refused, and none of it stores anything; the
 * media type's parameters and the batch route's larger limit still work.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startCluster, type Cluster } from './harness.js';

describe('JSON bodies', { timeout: 60_000 }, () => {
  let c: Cluster;
  before(async () => (c = await startCluster({ workers: 0 })));
  after(() => c.close());

  const count = async () => (await c.api.req('GET', '/v1/tasks?limit=500')).body.tasks.length as number;

  it('answers a broken or poisoned body with 400 naming the body and the reason, and stores nothing', async () => {
    const before = await count();
    const cases: Array<[string, RegExp]> = [
      ['{"command": "true",}', /^not valid JSON: Expected double-quoted property name \(line 1, column 20\)$/],
      ['{"command":\n "true"\n "args": []}', /^not valid JSON: Expected ',' or '}' after property value \(line 3, column 2\)$/],
      ['{"command": "true"', /^not valid JSON: Expected ',' or '}' after property value \(line 1, column 19\)$/],
      ['{"command": ', /^not valid JSON: Unexpected end of JSON input \(line 1, column 13\)$/],
      ['{"command": "true", "__proto__": {"owner": "someone-else"}}', /^a "__proto__" key, or a "constructor" key holding "prototype", is not allowed$/],
      ['{"command": "true", "env": {"constructor": {"prototype": {}}}}', /"constructor" key holding "prototype"/],
      ['', /^empty JSON body$/],
    ];
    for (const [body, reason] of cases) {
      for (const path of ['/v1/tasks', '/v1/tasks/batch']) {
        const r = await c.api.req('POST', path, body);
        assert.equal(r.status, 400, `${path} ${body} -> ${r.text}`);
        assert.equal(r.body.error.code, 'invalid_input', r.text);
        assert.equal(r.body.error.field, 'body', r.text);
        assert.match(r.body.error.reason, reason, r.text);
        assert.equal(r.body.error.message, `body: ${r.body.error.reason}`);
      }
    }
    assert.equal(await count(), before);
  });

  it('still takes a charset parameter, and the batch route its larger bodies', async () => {
    const one = await c.api.req('POST', '/v1/tasks', JSON.stringify({ command: 'true' }), undefined, { headers: { 'content-type': 'application/json; charset=utf-8' } });
    assert.equal(one.status, 201, one.text);
    // Over the single route's body limit, within the batch route's.
    const tasks = Array.from({ length: 600 }, (_, i) => ({ command: 'echo', args: [String(i).padStart(2_000, '0')] }));
    const big = JSON.stringify({ tasks });
    const single = await c.api.req('POST', '/v1/tasks', JSON.stringify({ command: 'echo', args: tasks.map((t) => t.args[0]) }));
    assert.equal(single.status, 413, single.text);
    const batch = await c.api.req('POST', '/v1/tasks/batch', big);
    assert.equal(batch.status, 201, batch.text);
    assert.equal(batch.body.tasks.length, 600);
  });
});
