/**
 * The submit form's values (all text, as typed) ↔ the API's submit body.
 * The form checks only what it must to build a body (KEY=VALUE lines);
 * everything else is the API's to judge, and its messages are shown next to
 * the field they name (fieldForApiError).
 */
import type { SubmitTaskRequest, Task } from '../api/types';

export interface FormValues {
  name: string;
  mode: 'command' | 'script';
  command: string;
  /** One argument per line. */
  args: string;
  script: string;
  /** Words separated by spaces, e.g. "bash -e". */
  interpreter: string;
  /** KEY=VALUE per line. */
  env: string;
  timeout: string;
  maxRetries: string;
  baseDelay: string;
  factor: string;
  maxDelay: string;
  priority: string;
  labels: string;
  requires: string;
}

export type FieldName = Exclude<keyof FormValues, 'mode'>;

export const EMPTY_FORM: FormValues = {
  name: '',
  mode: 'command',
  command: '',
  args: '',
  script: '',
  interpreter: '',
  env: '',
  timeout: '',
  maxRetries: '',
  baseDelay: '',
  factor: '',
  maxDelay: '',
  priority: '',
  labels: '',
  requires: '',
};

export class FormInputError extends Error {
  constructor(
    readonly field: FieldName,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/** "K=V" lines → object. Blank lines are skipped; the value may contain "=". */
export function parsePairs(field: FieldName, text: string): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  let any = false;
  lines.forEach((raw, i) => {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '') return;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new FormInputError(field, `line ${i + 1}: expected KEY=VALUE`);
    const k = line.slice(0, eq).trim();
    if (Object.hasOwn(out, k)) throw new FormInputError(field, `line ${i + 1}: ${k} is set twice`);
    out[k] = line.slice(eq + 1);
    any = true;
  });
  return any ? out : undefined;
}

/**
 * A duration field as the API's duration text; the API parses it. A bare
 * number is seconds ("30" is "30s"), as the CLI's duration flags read it: the
 * API's bare integer is milliseconds, which nobody typing into a form means.
 */
function duration(v: string): string | undefined {
  const t = v.trim();
  if (!t) return undefined;
  return /^\d+(\.\d+)?$/.test(t) ? `${t}s` : t;
}

function number(v: string): number | undefined {
  const t = v.trim();
  return t === '' ? undefined : Number(t);
}

export function toBody(v: FormValues): SubmitTaskRequest {
  const body: SubmitTaskRequest = {};
  if (v.name.trim()) body.name = v.name.trim();
  if (v.mode === 'command') {
    body.command = v.command.trim();
    const args = v.args.split('\n').map((a) => a.replace(/\r$/, ''));
    while (args.length && args[args.length - 1] === '') args.pop();
    if (args.length) body.args = args;
  } else {
    body.script = v.script;
    const interp = v.interpreter.trim().split(/\s+/).filter(Boolean);
    if (interp.length) body.interpreter = interp;
  }
  const env = parsePairs('env', v.env);
  if (env) body.env = env;
  const timeout = duration(v.timeout);
  if (timeout !== undefined) body.timeout = timeout;
  const retry: NonNullable<SubmitTaskRequest['retry']> = {};
  const maxRetries = number(v.maxRetries);
  if (maxRetries !== undefined) retry.maxRetries = maxRetries;
  const baseDelay = duration(v.baseDelay);
  if (baseDelay !== undefined) retry.baseDelay = baseDelay;
  const factor = number(v.factor);
  if (factor !== undefined) retry.factor = factor;
  const maxDelay = duration(v.maxDelay);
  if (maxDelay !== undefined) retry.maxDelay = maxDelay;
  if (Object.keys(retry).length) body.retry = retry;
  const priority = number(v.priority);
  if (priority !== undefined) body.priority = priority;
  const labels = parsePairs('labels', v.labels);
  if (labels) body.labels = labels;
  const requires = parsePairs('requires', v.requires);
  if (requires) body.requires = requires;
  return body;
}

/** An API error's `field` ("retry.maxRetries", "env.FOO", "args.2") → the form field that shows it. */
export function fieldForApiError(field: string | undefined): FieldName | null {
  if (!field) return null;
  const [head, sub] = field.split('.');
  switch (head) {
    case 'name':
    case 'command':
    case 'args':
    case 'script':
    case 'interpreter':
    case 'env':
    case 'timeout':
    case 'priority':
    case 'labels':
    case 'requires':
      return head;
    case 'retry':
      if (sub === 'baseDelay' || sub === 'factor' || sub === 'maxDelay' || sub === 'maxRetries') return sub;
      return 'maxRetries';
    default:
      return null;
  }
}

/** "Submit again": the form filled from an existing task (env values only when the caller may see them). */
export function fromTask(t: Task): FormValues {
  const pairs = (m: Record<string, string>) =>
    Object.entries(m)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n');
  return {
    name: t.name,
    mode: t.script !== null ? 'script' : 'command',
    command: t.command ?? '',
    args: t.args.join('\n'),
    script: t.script ?? '',
    interpreter: t.script !== null ? t.interpreter.join(' ') : '',
    env: t.envRedacted ? '' : pairs(t.env),
    timeout: t.timeoutMs === null ? '' : msText(t.timeoutMs),
    maxRetries: String(t.retry.maxRetries),
    baseDelay: msText(t.retry.baseDelayMs),
    factor: String(t.retry.factor),
    maxDelay: msText(t.retry.maxDelayMs),
    priority: t.priority === 0 ? '' : String(t.priority),
    labels: pairs(t.labels),
    requires: pairs(t.requires),
  };
}

/** Milliseconds as the API's duration text: "1h", "30s", "500ms". */
export function msText(ms: number): string {
  if (ms % 3600_000 === 0 && ms > 0) return `${ms / 3600_000}h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0 && ms > 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
