/**
 * Turns a validated submit body into a TaskSpec: defaults, durations, and the
 * cross-field rules JSON Schema cannot say well (exactly one of command/script).
 * Throws InvalidInputError naming the field.
 */
import { createHash } from 'node:crypto';
import { formatDuration, parseDuration } from '../core/duration.js';
import { InvalidInputError } from '../core/errors.js';
import { parseIsoInstant } from '../core/iso-instant.js';
import { DEFAULT_RETRY_POLICY, RETRY_LIMITS } from '../core/retry-policy.js';
import type { TaskSpec } from '../core/task.js';
import type { SubmitBody } from './schemas.js';

const MAX_TIMEOUT_MS = 30 * 24 * 3600 * 1000;

function duration(field: string, v: string | number | undefined, fallback: number | null, max: number): number | null {
  if (v === undefined) return fallback;
  const ms = parseDuration(v);
  if (ms === null) throw new InvalidInputError(field, `"${v}" is not a duration (use e.g. 500ms, 30s, 5m, 1h30m or integer milliseconds)`);
  if (ms > max) throw new InvalidInputError(field, `must be at most ${max} ms (${formatDuration(max)})`);
  return ms;
}

/**
 * NUL cannot pass through an exec() argument or environment entry, and
 * PostgreSQL text cannot hold it: reject it up front, naming the field.
 */
function rejectNul(body: SubmitBody): void {
  const check = (field: string, v: string | undefined) => {
    if (v !== undefined && v.includes('\0')) throw new InvalidInputError(field, 'must not contain NUL (\\u0000) characters');
  };
  check('name', body.name);
  check('command', body.command);
  check('script', body.script);
  check('cwd', body.cwd);
  body.args?.forEach((a, i) => check(`args.${i}`, a));
  body.interpreter?.forEach((a, i) => check(`interpreter.${i}`, a));
  for (const [k, v] of Object.entries(body.env ?? {})) {
    check('env', k);
    check(`env.${k}`, v);
  }
  for (const [k, v] of Object.entries(body.labels ?? {})) {
    check('labels', k);
    check(`labels.${k}`, v);
  }
  for (const [k, v] of Object.entries(body.requires ?? {})) {
    check('requires', k);
    check(`requires.${k}`, v);
  }
}

/**
 * Map keys (labels, requires): the schema's key length is not enforced by
 * JSON Schema records (TypeBox renders them as patternProperties), so here.
 */
function checkKeys(field: string, map: Record<string, string> | undefined): void {
  for (const k of Object.keys(map ?? {})) {
    if (k.length < 1 || k.length > 256) throw new InvalidInputError(field, `keys must be 1..256 characters (got ${k.length})`);
  }
}

/**
 * Environment names: an entry reaches the process as NAME=VALUE, so a name
 * with `=` would set a different variable (`{"A=B": "x"}` is A="B=x") and an
 * empty one an entry no program can read. Any other character passes, as
 * exec() allows; names the agent sets itself (DROVER_TASK_ID, ...) are
 * overridden there (worker/task-env.ts).
 */
function checkEnvNames(env: Record<string, string> | undefined): void {
  checkKeys('env', env);
  for (const k of Object.keys(env ?? {})) {
    if (k.includes('=')) throw new InvalidInputError('env', `names must not contain "=" (got "${k.slice(0, 64)}")`);
  }
}

export function toTaskSpec(body: SubmitBody): TaskSpec {
  rejectNul(body);
  checkKeys('labels', body.labels);
  checkKeys('requires', body.requires);
  checkEnvNames(body.env);
  if (body.command === undefined && body.script === undefined) throw new InvalidInputError('command', 'required: give "command" (with optional "args") or "script"');
  if (body.command !== undefined && body.script !== undefined) throw new InvalidInputError('script', 'give either "command" or "script", not both');
  if (body.args !== undefined && body.command === undefined) throw new InvalidInputError('args', 'only allowed with "command"');
  if (body.interpreter !== undefined && body.script === undefined) throw new InvalidInputError('interpreter', 'only allowed with "script"');
  if (body.cwd !== undefined && !body.cwd.startsWith('/')) throw new InvalidInputError('cwd', `must be an absolute path (got "${body.cwd}"); the CLI's --cwd resolves a relative one`);
  const timeoutMs = duration('timeout', body.timeout, null, MAX_TIMEOUT_MS);
  if (timeoutMs === 0) throw new InvalidInputError('timeout', 'must be greater than 0');
  const r = body.retry ?? {};
  // A default never conflicts with what was given: a first delay of 2h alone raises the cap (default 1h)
  // to 2h, a cap of 500ms alone lowers the first delay (default 1s) to 500ms. Only two given values can.
  const givenBase = duration('retry.baseDelay', r.baseDelay, null, RETRY_LIMITS.maxDelayMs);
  const givenMax = duration('retry.maxDelay', r.maxDelay, null, RETRY_LIMITS.maxDelayMs);
  const baseDelayMs = givenBase ?? Math.min(DEFAULT_RETRY_POLICY.baseDelayMs, givenMax ?? Infinity);
  const maxDelayMs = givenMax ?? Math.max(DEFAULT_RETRY_POLICY.maxDelayMs, baseDelayMs);
  if (maxDelayMs < baseDelayMs) throw new InvalidInputError('retry.maxDelay', `must not be less than retry.baseDelay (${formatDuration(maxDelayMs)} < ${formatDuration(baseDelayMs)})`);
  return {
    name: body.name ?? body.command ?? 'script',
    kind: 'batch',
    command: body.command ?? null,
    args: body.args ?? [],
    script: body.script ?? null,
    interpreter: body.script !== undefined ? (body.interpreter ?? defaultInterpreter(body.script)) : [],
    cwd: body.cwd ?? null,
    env: body.env ?? {},
    timeoutMs,
    retry: {
      maxRetries: r.maxRetries ?? DEFAULT_RETRY_POLICY.maxRetries,
      baseDelayMs,
      factor: r.factor ?? DEFAULT_RETRY_POLICY.factor,
      maxDelayMs,
    },
    priority: body.priority ?? 0,
    labels: body.labels ?? {},
    requires: body.requires ?? {},
  };
}

/**
 * The interpreter of a script submitted without one: none for a script whose
 * first line is `#!` (the worker executes the file, so the kernel runs the
 * interpreter that line names, e.g. `#!/usr/bin/env python3`), else `sh`.
 * Decided here, at submit time, so the stored task (and `drover show`) says
 * how it runs.
 */
export function defaultInterpreter(script: string): string[] {
  return script.startsWith('#!') ? [] : ['sh'];
}

/** How far ahead a task may be scheduled (runAt / delay). */
export const MAX_SCHEDULE_AHEAD_MS = 366 * 24 * 3600 * 1000;

/**
 * When a task submitted with `runAt` or `delay` is released (epoch ms), or
 * null to release it now (neither given, a delay of 0, or a runAt that has
 * passed: a past time runs now). Throws InvalidInputError naming the field.
 */
export function toRunAfter(body: Pick<SubmitBody, 'runAt' | 'delay'>, now: number): number | null {
  if (body.runAt !== undefined && body.delay !== undefined) throw new InvalidInputError('delay', 'give either "runAt" or "delay", not both');
  let at: number | null = null;
  if (body.runAt !== undefined) {
    const t = parseIsoInstant(body.runAt);
    if (t === null) throw new InvalidInputError('runAt', `"${body.runAt}" is not an ISO 8601 time with a zone (e.g. 2026-12-01T18:00:00Z or 2026-12-01T19:00:00+01:00)`);
    at = t;
    if (at - now > MAX_SCHEDULE_AHEAD_MS) throw new InvalidInputError('runAt', `must be at most 366 days ahead (got ${body.runAt})`);
  } else if (body.delay !== undefined) {
    const ms = duration('delay', body.delay, null, MAX_SCHEDULE_AHEAD_MS)!;
    at = now + ms;
  }
  return at !== null && at > now ? at : null;
}

/**
 * JSON with object keys sorted at every level, so two bodies that mean the
 * same (keys in another order, other whitespace) give the same text.
 */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(v as Record<string, unknown>)
    .filter(([, x]) => x !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(',')}}`;
}

/** What an idempotency key is bound to: sha256 (hex) of the validated body's canonical JSON (a submit's or a whole batch's). */
export function requestHash(body: SubmitBody | { tasks: SubmitBody[] } | { rerunOf: string }): string {
  return createHash('sha256').update(canonicalJson(body), 'utf8').digest('hex');
}
