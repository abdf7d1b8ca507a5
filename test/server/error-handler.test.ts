/** The 400's field and reason from ajv's errors (error-handler.ts describeValidation), with the server's ajv options. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { describeValidation } from '../../src/server/error-handler.js';

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
  it('other errors keep their reasons', () => {
    assert.deepEqual(errorsOf(Type.Object({ limit: Type.Integer() }), { limit: 'abc' }), { field: 'limit', reason: 'must be integer' });
    assert.deepEqual(errorsOf(Type.Object({}, { additionalProperties: false }), { kind: 'x' }), { field: 'kind', reason: 'unknown field' });
  });
});
