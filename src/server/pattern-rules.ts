/**
 * The string patterns of the API's schemas, each with its rule in words: a
 * value that does not match is a 400 whose reason is `expected <rule>`
 * (error-handler.ts), not ajv's "must match pattern ^(?!\.{1,2}$)...", which
 * names no character a person could fix, nor a bare "malformed".
 *
 * Keyed by the pattern's text, as ajv reports it (`params.pattern`), so a
 * pattern used in several places (a task id and a DAG run id are both ULIDs;
 * DAG and schedule names share one rule) has one rule. A pattern left out
 * answers "malformed": the dashboard's sign-in code and session (web-auth.ts),
 * whose shape is not the caller's to choose. The headers have their own rules
 * (schemas.ts HEADER_RULES). test/e2e/openapi-docs.test.ts checks that every
 * pattern in /openapi.json has a rule here or is one of those.
 */
import { DAG_NAME_PATTERN } from '../core/dag/dag-definition.js';
import { TASK_ID_PATTERN } from '../core/ids.js';

const CROCKFORD = '0-9 and A-Z without I, L, O, U (Crockford base32)';

/**
 * A task-id prefix for search: 1..26 Crockford base32 characters in either
 * case (the route upper-cases it, as ids are stored).
 */
export const TASK_ID_PREFIX_PATTERN = '^[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{1,26}$';
/** A task list's cursor: a task id (order created), or "<updatedAt ms>.<task id>" (order ended; store/task-list.ts). */
export const TASK_LIST_CURSOR_PATTERN = `^(?:[0-9]{1,16}\\.)?${TASK_ID_PATTERN.slice(1, -1)}$`;
/** The cursor of a schedule or DAG list page (its nextCursor). */
export const PAGE_CURSOR_PATTERN = '^[0-9A-Z]+$';
/** A schedule named in the task list's `schedule` filter: the characters of a schedule name. */
export const SCHEDULE_FILTER_PATTERN = '^[A-Za-z0-9._-]{1,100}$';
/** A worker's id (drover worker --id): its hello (worker-messages.ts) and POST /v1/workers/:id/drain. */
export const WORKER_ID_PATTERN = '^[A-Za-z0-9._:-]{1,100}$';
/** A token's id: the first 16 hex digits of its hash (auth.ts tokenIdOf). */
export const TOKEN_ID_PATTERN = '^[0-9a-f]{16}$';
/** The user a new token acts as. */
export const TOKEN_USER_PATTERN = '^[A-Za-z0-9._@-]+$';
/** Idempotency-Key, Last-Event-ID and the stream's ?cursor= (schemas.ts HEADER_RULES). */
export const VISIBLE_ASCII_PATTERN = '^[\\x21-\\x7E]+$';
/** A token's name: any text but NUL. */
export const TOKEN_NAME_PATTERN = '^[^\\u0000]+$';

const RULES: ReadonlyMap<string, string> = new Map([
  [TASK_ID_PATTERN, `an id of 26 characters, ${CROCKFORD}, upper case`],
  [TASK_ID_PREFIX_PATTERN, `1..26 characters of an id, ${CROCKFORD}, either case`],
  [TASK_LIST_CURSOR_PATTERN, 'the nextCursor of the page before (a task id, or "<ms>.<task id>" with order=ended)'],
  [PAGE_CURSOR_PATTERN, 'the nextCursor of the page before (0-9 and A-Z)'],
  // SCHEDULE_NAME_PATTERN (schedule-schemas.ts) is this text too.
  [DAG_NAME_PATTERN, '1..100 of A-Z a-z 0-9 . _ -, not . or .. alone'],
  [SCHEDULE_FILTER_PATTERN, 'a schedule name: 1..100 of A-Z a-z 0-9 . _ -'],
  [WORKER_ID_PATTERN, 'a worker id: 1..100 of A-Z a-z 0-9 . _ : -'],
  [TOKEN_ID_PATTERN, 'a token id: 16 hex digits in lower case (drover token ls)'],
  [TOKEN_USER_PATTERN, 'A-Z a-z 0-9 . _ @ - only'],
  [TOKEN_NAME_PATTERN, 'text without a NUL character'],
  // A header names its own rule (HEADER_RULES); this is for the stream's ?cursor=, which has the same pattern.
  [VISIBLE_ASCII_PATTERN, 'visible ASCII characters only (0x21-0x7E)'],
]);

/** The rule of a schema pattern, or undefined for one without (answered "malformed"). */
export function patternRule(pattern: unknown): string | undefined {
  return typeof pattern === 'string' ? RULES.get(pattern) : undefined;
}
