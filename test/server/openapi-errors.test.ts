/**
 * The rules that add the layers' error statuses to each route's OpenAPI
 * responses (src/server/openapi-errors.ts), and the reference page's escaping
 * and type words (src/server/api-reference-html.ts). Pure; the real document
 * and page are checked in test/e2e/openapi-docs.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { layerStatuses } from '../../src/server/openapi-errors.js';
import { escapeHtml, renderApiReference, typeText } from '../../src/server/api-reference-html.js';

describe('layer error statuses', () => {
  it('by access, method, inputs and path parameters', () => {
    // Every /v1/ route refuses a query parameter it does not take (request-shape.ts): 400 even without a schema.
    assert.deepEqual(layerStatuses({ method: 'GET', url: '/v1/workers', schema: {}, config: { auth: ['admin'] } } as never), [400, 401, 403, 503]);
    assert.deepEqual(layerStatuses({ method: 'GET', url: '/docs/api', schema: {}, config: { auth: 'public' } } as never), [503]);
    assert.deepEqual(layerStatuses({ method: 'GET', url: '/v1/tasks', schema: { querystring: {} }, config: { auth: ['admin'] } } as never), [400, 401, 403, 503]);
    assert.deepEqual(layerStatuses({ method: 'POST', url: '/v1/tasks/:id/cancel', schema: {}, config: { auth: ['user'] } } as never), [400, 401, 403, 404, 413, 414, 415, 503]);
    assert.deepEqual(layerStatuses({ method: 'POST', url: '/v1/session', schema: { body: {} }, config: { auth: 'public' } } as never), [400, 413, 415, 503]);
  });
});

describe('the reference page', () => {
  it('escapes every text of the document', () => {
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
    const html = renderApiReference({
      info: { title: 'T<script>', version: '1' },
      paths: { '/x/{id}': { get: { tags: ['t'], summary: '<img src=x onerror=alert(1)>', responses: { '200': { description: 'ok' } } } } },
    });
    assert.doesNotMatch(html, /<script>|<img/);
    assert.match(html, /&lt;img src=x onerror=alert\(1\)&gt;/);
  });
  it('type words', () => {
    assert.equal(typeText({ type: 'array', items: { type: 'string' } }), 'array of string');
    assert.equal(typeText({ anyOf: [{ const: 'a' }, { const: 'b' }] }), 'one of "a", "b"');
    assert.equal(typeText({ anyOf: [{ type: 'integer' }, { type: 'null' }] }), 'integer | null');
    assert.equal(typeText({ type: 'string', nullable: true }), 'string | null');
  });
});
