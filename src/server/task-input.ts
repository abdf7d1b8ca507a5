/**
 * Turns a validated submit body into a TaskSpec: defaults, durations, and the
 * cross-field rules JSON Schema cannot say well (exactly one of command/script).
 * Throws InvalidInputError naming the field.
 */
import { parseDuration } from '../core/duration.js';
import { InvalidInputError } from '../core/errors.js';
import { DEFAULT_RETRY_POLICY, RETRY_LIMITS } from '../core/retry-policy.js';
import type { TaskSpec } from '../core/task.js';
import type { SubmitBody } from './schemas.js';

const MAX_TIMEOUT_MS = 30 * 24 * 3600 * 1000;

function duration(field: string, v: string | number | undefined, fallback: number | null, max: number): number | null {
  if (v === undefined) return fallback;
  const ms = parseDuration(v);
  if (ms === null) throw new InvalidInputError(field, `"${v}" is not a duration (use e.g. 500ms, 30s, 5m, 1h30m or integer milliseconds)`);
  if (ms > max) throw new InvalidInputError(field, `must be at most ${max} ms`);
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
}

export function toTaskSpec(body: SubmitBody): TaskSpec {
  rejectNul(body);
  if (body.command === undefined && body.script === undefined) throw new InvalidInputError('command', 'required: give "command" (with optional "args") or "script"');
  if (body.command !== undefined && body.script !== undefined) throw new InvalidInputError('script', 'give either "command" or "script", not both');
  if (body.args !== undefined && body.command === undefined) throw new InvalidInputError('args', 'only allowed with "command"');
  if (body.interpreter !== undefined && body.script === undefined) throw new InvalidInputError('interpreter', 'only allowed with "script"');
  const timeoutMs = duration('timeout', body.timeout, null, MAX_TIMEOUT_MS);
  if (timeoutMs === 0) throw new InvalidInputError('timeout', 'must be greater than 0');
  const r = body.retry ?? {};
  const baseDelayMs = duration('retry.baseDelay', r.baseDelay, DEFAULT_RETRY_POLICY.baseDelayMs, RETRY_LIMITS.maxDelayMs)!;
  const maxDelayMs = duration('retry.maxDelay', r.maxDelay, DEFAULT_RETRY_POLICY.maxDelayMs, RETRY_LIMITS.maxDelayMs)!;
  if (maxDelayMs < baseDelayMs) throw new InvalidInputError('retry.maxDelay', 'must not be less than retry.baseDelay');
  return {
    name: body.name ?? body.command ?? 'script',
    kind: 'batch',
    command: body.command ?? null,
    args: body.args ?? [],
    script: body.script ?? null,
    interpreter: body.script !== undefined ? (body.interpreter ?? ['sh']) : [],
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
  };
}
