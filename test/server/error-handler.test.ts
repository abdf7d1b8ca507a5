/** The 400's field and reason from ajv's errors (error-handler.ts describeValidation), with the server's ajv options. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { describeValidation } from '../../src/server/error-handler.js';
import { TASK_ID_PATTERN } from '../../src/core/ids.js';
import { DAG_NAME_PATTERN } from '../../src/core/dag/dag-definition.js';
import { SCHEDULE_NAME_PATTERN } from '../../src/server/schedule-schemas.js';
import { WEB_SECRET_PATTERN } from '../../src/server/web-auth.js';

const ajv = new Ajv({ coerceTypes: 'array', removeAdditional: false, useDefaults: true, allErrors: false, strict: false });

function errorsOf(schema: object, value: unknown) {
  const validate = ajv.compile(schema);
  assert.equal(validate(value), false);
  return describeValidation({ validation: validate.errors ?? [], validationContext: 'querystring' });
}

describe('describeValidation', () => {
  it('a value outside a union of literals names every allowed value, not "must be equal to constant"', () => {
    const schema = Type.Object({ state: Type.Optional(Type.Union([Type.Literal('ready'), Type.Literal('failed'), Type.Literal('cancelled')])) });
    assert.deepEqual(errorsOf(schema, { state: 'bogus' }), { field: 'state', reason: 'must be one of ready, failed, cancelled' });
  });
  it('one literal: "must be" it; an enum: its values', () => {
    assert.deepEqual(errorsOf(Type.Object({ follow: Type.Literal('1') }), { follow: 'yes' }), { field: 'follow', reason: 'must be 1' });
    assert.deepEqual(errorsOf({ type: 'object', properties: { n: { enum: [1, 2] } } }, { n: 3 }), { field: 'n', reason: 'must be one of 1, 2' });
  });
  it('a value that does not match a pattern gets the pattern\'s rule in words (pattern-rules.ts), not the regular expression', () => {
    assert.deepEqual(errorsOf(Type.Object({ id: Type.String({ pattern: TASK_ID_PATTERN }) }), { id: '01m99n53bn948365byngrbca4c' }), {
      field: 'id',
      reason: 'expected an id of 26 characters, 0-9 and A-Z without I, L, O, U (Crockford base32), upper case',
    });
    const name = 'expected 1..100 of A-Z a-z 0-9 . _ -, not . or .. alone';
    assert.deepEqual(errorsOf(Type.Object({ name: Type.String({ pattern: DAG_NAME_PATTERN }) }), { name: '../x' }), { field: 'name', reason: name });
    // A schedule's name has the same rule (one pattern text, one rule).
    assert.deepEqual(errorsOf(Type.Object({ name: Type.String({ pattern: SCHEDULE_NAME_PATTERN }) }), { name: '..' }), { field: 'name', reason: name });
  });
  it('a pattern without a rule (the sign-in code, or one not listed) is "malformed"', () => {
    assert.deepEqual(errorsOf(Type.Object({ code: Type.String({ pattern: WEB_SECRET_PATTERN }) }), { code: 'short' }), { field: 'code', reason: 'malformed' });
    assert.deepEqual(errorsOf(Type.Object({ x: Type.String({ pattern: '^a+$' }) }), { x: 'b' }), { field: 'x', reason: 'malformed' });
  });
  it('a union (a duration, a nullable field) names the branch the value had the type of, or every type when it had none', () => {
    // As the server validates bodies: no coercion (app.ts newAjv).
    const body = new Ajv({ coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false, strict: false });
    const bodyErrors = (schema: object, value: unknown) => {
      const validate = body.compile(schema);
      assert.equal(validate(value), false);
      return describeValidation({ validation: validate.errors ?? [], validationContext: 'body' });
    };
    const duration = Type.Object({ timeout: Type.Union([Type.Integer({ minimum: 0 }), Type.String({ minLength: 1, maxLength: 32 })]) });
    assert.deepEqual(bodyErrors(duration, { timeout: true }), { field: 'timeout', reason: 'must be integer or string' });
    assert.deepEqual(bodyErrors(duration, { timeout: 1.5 }), { field: 'timeout', reason: 'must be integer or string' });
    assert.deepEqual(bodyErrors(duration, { timeout: -5 }), { field: 'timeout', reason: 'must be >= 0' });
    assert.deepEqual(bodyErrors(duration, { timeout: '' }), { field: 'timeout', reason: 'must not be empty' });
    const nullable = Type.Object({ n: Type.Union([Type.Integer(), Type.Null()]) });
    assert.deepEqual(bodyErrors(nullable, { n: 'x' }), { field: 'n', reason: 'must be integer or null' });
    // An object branch: its own error (named inside the object), whether at the object's level or deeper.
    const inner = Type.Object({ task: Type.Union([Type.Object({ a: Type.Optional(Type.Integer()) }, { additionalProperties: false }), Type.Null()]) });
    assert.deepEqual(bodyErrors(inner, { task: { b: 1 } }), { field: 'task.b', reason: 'unknown field' });
    assert.deepEqual(bodyErrors(inner, { task: { a: 'x' } }), { field: 'task.a', reason: 'must be integer' });
    assert.deepEqual(bodyErrors(inner, { task: 7 }), { field: 'task', reason: 'must be object or null' });
  });
  it('sizes in plain words: empty, at least, at most', () => {
    const s = Type.Object({
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 5 })),
      code: Type.Optional(Type.String({ minLength: 3 })),
      tasks: Type.Optional(Type.Array(Type.Integer(), { minItems: 1, maxItems: 2 })),
      two: Type.Optional(Type.Array(Type.Integer(), { minItems: 2 })),
      env: Type.Optional(Type.Record(Type.String(), Type.String(), { maxProperties: 1 })),
    });
    assert.deepEqual(errorsOf(s, { name: '' }), { field: 'name', reason: 'must not be empty' });
    assert.deepEqual(errorsOf(s, { name: 'abcdef' }), { field: 'name', reason: 'must be at most 5 characters' });
    assert.deepEqual(errorsOf(s, { code: 'ab' }), { field: 'code', reason: 'must be at least 3 characters' });
    assert.deepEqual(errorsOf(s, { tasks: [] }), { field: 'tasks', reason: 'must have at least 1 item' });
    assert.deepEqual(errorsOf(s, { tasks: [1, 2, 3] }), { field: 'tasks', reason: 'must have at most 2 items' });
    assert.deepEqual(errorsOf(s, { two: [1] }), { field: 'two', reason: 'must have at least 2 items' });
    assert.deepEqual(errorsOf(s, { env: { A: 'x', B: 'y' } }), { field: 'env', reason: 'must have at most 1 entry' });
  });
  it('other errors keep their reasons', () => {
    assert.deepEqual(errorsOf(Type.Object({ limit: Type.Integer() }), { limit: 'abc' }), { field: 'limit', reason: 'must be integer' });
    assert.deepEqual(errorsOf(Type.Object({}, { additionalProperties: false }), { kind: 'x' }), { field: 'kind', reason: 'unknown field' });
  });
});
