/**
 * Maps every error that reaches the HTTP edge to `{"error": {...}}` with the
 * status the error class names (src/core/errors.ts). Fastify's own errors
 * (schema validation, body too large, malformed JSON) are translated into
 * the same shape, naming the offending field.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isDroverError } from '../core/errors.js';
import { HEADER_RULES } from './schemas.js';
import { discardBody } from './discard-body.js';
import { patternRule } from './pattern-rules.js';

/** How much of an over-limit body is read and dropped before the 413 goes out (discard-body.ts). */
const DRAIN_LIMITS = { maxBytes: 16 * 1024 * 1024, idleMs: 1000, maxMs: 10_000 };

interface AjvError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** "/retry/maxRetries" → "retry.maxRetries"; adds the property for required/additionalProperties. */
export function fieldOf(e: AjvError, context: string | undefined): string {
  const path = (e.instancePath ?? '').split('/').filter(Boolean);
  if (e.keyword === 'additionalProperties' && typeof e.params?.additionalProperty === 'string') path.push(e.params.additionalProperty);
  if (e.keyword === 'required' && typeof e.params?.missingProperty === 'string') path.push(e.params.missingProperty);
  if (path.length === 0) return context === 'body' ? 'body' : (context ?? 'request');
  return path.join('.');
}

function reasonOf(e: AjvError): string {
  switch (e.keyword) {
    case 'additionalProperties':
      return 'unknown field';
    case 'required':
      return 'required';
    case 'pattern': {
      // The rule in words where the pattern has one (pattern-rules.ts), not ajv's regular expression.
      const rule = patternRule(e.params?.pattern);
      return rule ? `expected ${rule}` : 'malformed';
    }
    case 'anyOf':
      return 'has the wrong type or value';
    // Sizes in plain words rather than ajv's "must NOT have fewer than 1 characters".
    case 'minLength':
      return Number(e.params?.limit) === 1 ? 'must not be empty' : `must be at least ${String(e.params?.limit)} characters`;
    case 'maxLength':
      return `must be at most ${String(e.params?.limit)} characters`;
    case 'minItems':
      return `must have at least ${count(e.params?.limit, 'item')}`;
    case 'maxItems':
      return `must have at most ${count(e.params?.limit, 'item')}`;
    case 'maxProperties':
      return `must have at most ${count(e.params?.limit, 'entry', 'entries')}`;
    default:
      return e.message ?? 'invalid';
  }
}

/** "1 item", "1000 items". */
function count(n: unknown, one: string, many = `${one}s`): string {
  return `${String(n)} ${Number(n) === 1 ? one : many}`;
}

/** A header's validation error: the header named as documented, and its rule (schemas.ts HEADER_RULES). */
function headerError(e: AjvError): { field: string; reason: string } | null {
  const name = (e.instancePath ?? '').split('/').filter(Boolean)[0];
  const rule = name !== undefined ? (HEADER_RULES as Record<string, { name: string; rule: string }>)[name] : undefined;
  if (!rule) return null;
  return { field: rule.name, reason: `must be ${rule.rule}` };
}

/** 1048576 → "1 MiB"; sizes that are not whole MiB in bytes. */
function sizeText(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

export function errorBody(code: string, message: string, extra: Record<string, string> = {}) {
  return { error: { code, message, ...extra } };
}

/** The field and reason of a schema validation error (Fastify's `err.validation`), as the 400 answer names them. */
export function describeValidation(err: { validation?: unknown[]; validationContext?: string }): { field: string; reason: string } {
  // Report the most specific error: ajv lists union branches before the union itself.
  const all = (err.validation ?? []) as AjvError[];
  const first = unionBranch(all) ?? all[0] ?? {};
  const header = err.validationContext === 'headers' ? headerError(first) : null;
  return {
    field: header?.field ?? fieldOf(first, err.validationContext),
    reason: header?.reason ?? allowedValues(first, all) ?? unionTypes(all) ?? reasonOf(first),
  };
}

/**
 * The errors ajv (allErrors off) gives for a value that fails a union such as
 * a duration (integer milliseconds or a string like "5m") or a nullable
 * field: each branch's first error at the value itself, then the `anyOf`.
 * Null when the value got no union error at its own level, or when a branch
 * failed deeper inside the value (that error, first in the list, is the most
 * specific and is reported as it is).
 */
function unionLevel(all: AjvError[]): AjvError[] | null {
  const union = all.findIndex((e) => e.keyword === 'anyOf');
  if (union <= 0) return null;
  const branches = all.slice(0, union);
  return branches.every((e) => e.instancePath === all[union]!.instancePath) ? branches : null;
}

/**
 * The branch whose type the value had, when exactly one had it: for -5 as a
 * duration, "must be >= 0" (the integer branch), not the first branch's
 * "must be integer"; for "" likewise the string branch's minimum length.
 */
function unionBranch(all: AjvError[]): AjvError | null {
  const typed = unionLevel(all)?.filter((e) => e.keyword !== 'type') ?? [];
  return typed.length === 1 ? typed[0]! : null;
}

/** A value of none of the union's types: "must be integer or string", not only the first branch's type. */
function unionTypes(all: AjvError[]): string | null {
  const branches = unionLevel(all);
  if (!branches || branches.some((e) => e.keyword !== 'type')) return null;
  const types = [...new Set(branches.map((e) => String(e.params?.type)))];
  return `must be ${types.join(' or ')}`;
}

/**
 * "must be one of a, b, c" for a value outside a list (TypeBox's union of
 * literals: one ajv `const` error per choice, at the same path; or `enum`),
 * rather than ajv's "must be equal to constant", which names none of them.
 */
function allowedValues(first: AjvError, all: AjvError[]): string | null {
  let values: unknown[] = [];
  if (first.keyword === 'enum' && Array.isArray(first.params?.allowedValues)) values = first.params.allowedValues;
  else if (first.keyword === 'const') {
    values = all.filter((e) => e.keyword === 'const' && e.instancePath === first.instancePath).map((e) => e.params?.allowedValue);
  }
  if (values.length === 0) return null;
  return `must be ${values.length === 1 ? '' : 'one of '}${values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ')}`;
}

export function handleError(this: unknown, err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  if (err.validation && err.validation.length) {
    const { field, reason } = describeValidation(err);
    void reply.code(400).send(errorBody('invalid_input', `${field}: ${reason}`, { field, reason }));
    return;
  }
  if (isDroverError(err)) {
    void reply.code(err.httpStatus).send({ error: err.toJSON() });
    return;
  }
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': {
      // The route's own limit (POST /v1/tasks/batch has a larger one than BODY_LIMIT).
      const reason = `larger than the ${sizeText(req.routeOptions.bodyLimit)} limit`;
      // Lingering close (discard-body.ts): the rest of the body is dropped first (bounded), then the answer.
      void discardBody(req.raw, DRAIN_LIMITS).then(() => reply.code(413).send(errorBody('payload_too_large', `body: ${reason}`, { field: 'body', reason })));
      return;
    }
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      void reply.code(415).send(errorBody('invalid_input', 'body: send Content-Type: application/json', { field: 'body', reason: 'unsupported content type' }));
      return;
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      void reply.code(400).send(errorBody('invalid_input', 'body: empty JSON body', { field: 'body', reason: 'empty JSON body' }));
      return;
  }
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    // e.g. malformed JSON: Fastify sets 400 and a parser message.
    void reply.code(err.statusCode).send(errorBody('invalid_input', `body: ${err.message}`, { field: 'body', reason: err.message }));
    return;
  }
  req.log.error({ err }, 'internal error');
  void reply.code(500).send(errorBody('internal', 'internal server error'));
}

/**
 * Errors the router raises before any route matches (Fastify's
 * frameworkErrors), in the API's error shape rather than Fastify's own: a
 * path segment longer than the router's 100 characters (414; no id or name
 * is that long), or a URL it cannot decode (400). They come before
 * authentication, as a 404 would with no route to decide it on, and depend on
 * nothing stored.
 */
export function handleFrameworkError(err: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    const reason = 'a path segment is longer than 100 characters';
    void reply.code(414).send(errorBody('uri_too_long', `path: ${reason}`, { field: 'path', reason }));
    return;
  }
  const reason = err.code === 'FST_ERR_BAD_URL' ? 'malformed URL' : err.message;
  void reply.code(400).send(errorBody('invalid_input', `path: ${reason}`, { field: 'path', reason }));
}
