/**
 * Route schemas compiled at first use (src/server/lazy-compilers.ts): the
 * wrappers compile once, at the first call, and then behave as the compiled
 * function (a validator's `errors` included); a schema that does not compile
 * fails at that first call, or at once when eager. And every route's schemas
 * of the real server compile: a server started in this process with
 * `eagerSchemas` (every e2e test runs the lazy default).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { buildSerializerFactory, lazySerializer, lazyValidator, type Validator } from '../../src/server/lazy-compilers.js';
import { startServer } from '../../src/server/main.js';

describe('lazyValidator', () => {
  it('compiles at the first call, once, and carries the errors of each call', () => {
    let compiles = 0;
    const compiled: Validator = (data) => {
      const ok = typeof data === 'number';
      compiled.errors = ok ? null : [{ message: `not a number: ${String(data)}` } as never];
      return ok;
    };
    const v = lazyValidator(() => {
      compiles++;
      return compiled;
    });
    assert.equal(compiles, 0);
    assert.equal(v('x'), false);
    assert.deepEqual(v.errors, [{ message: 'not a number: x' }]);
    assert.equal(v(3), true);
    assert.equal(v.errors, null);
    assert.equal(compiles, 1);
  });

  it('a compile that throws throws at the call, and again at the next', () => {
    const v = lazyValidator(() => {
      throw new Error('bad schema');
    });
    assert.throws(() => v(1), /bad schema/);
    assert.throws(() => v(1), /bad schema/);
  });
});

describe('lazySerializer', () => {
  it('compiles at the first call, once', () => {
    let compiles = 0;
    const s = lazySerializer(() => {
      compiles++;
      return (d) => `<${JSON.stringify(d)}>`;
    });
    assert.equal(compiles, 0);
    assert.equal(s({ a: 1 }), '<{"a":1}>');
    assert.equal(s(2), '<2>');
    assert.equal(compiles, 1);
  });
});

describe('buildSerializerFactory', () => {
  const route = (schema: unknown) => ({ schema, method: 'GET', url: '/x', httpStatus: '200' });
  const schema = { type: 'object', properties: { id: { type: 'string' }, n: { type: 'integer' } } };

  it('serializes as fast-json-stringify does, keeping only the declared properties', () => {
    for (const eager of [false, true]) {
      const ser = buildSerializerFactory(eager)({}, {})(route(schema));
      assert.equal(ser({ id: 'a', n: 2, secret: 'no' }), '{"id":"a","n":2}');
    }
  });

  it('a schema that does not compile: lazy throws at the first call, eager at once', () => {
    const bad = { type: 'object', properties: { a: { $ref: '#/definitions/missing' } } };
    const lazy = buildSerializerFactory(false)({}, {})(route(bad));
    assert.throws(() => lazy({ a: 1 }));
    assert.throws(() => buildSerializerFactory(true)({}, {})(route(bad)));
  });
});

describe('the real routes', () => {
  it('every validator and serializer compiles (a server with eagerSchemas starts and answers)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'drover-eager-'));
    const server = await startServer({ db: `sqlite:${join(dir, 'db.sqlite')}`, port: 0, logLevel: 'silent', eagerSchemas: true, adminToken: 'eager-admin-token-0123456789' });
    try {
      const r = await fetch(`${server.url}/v1/tasks?limit=1`, { headers: { authorization: 'Bearer eager-admin-token-0123456789' } });
      assert.equal(r.status, 200);
      assert.deepEqual(((await r.json()) as { tasks: unknown[] }).tasks, []);
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
