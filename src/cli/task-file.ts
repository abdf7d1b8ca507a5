/**
 * Reads the task file of `drover submit --from-file`: JSON Lines, one task
 * object per line with the fields of POST /v1/tasks; blank lines and lines
 * starting with `#` are skipped. The whole file is checked before anything is
 * sent, with the server's own rules (its SubmitBody schema and toTaskSpec,
 * which are pure), so a bad line is reported with its number and field and
 * nothing is submitted. The server checks again, of course.
 *
 * Loaded only by --from-file (a dynamic import in commands/submit.ts): the
 * schema compiler is not on every CLI start-up's path.
 */
import { Ajv } from 'ajv';
import { InvalidInputError } from '../core/errors.js';
import type { SubmitTaskRequest } from '../client/types.js';
import { describeValidation } from '../server/error-handler.js';
import { SubmitBody } from '../server/schemas.js';
import { toTaskSpec } from '../server/task-input.js';
import { safeText } from './output.js';
import { UsageError } from './usage-error.js';

export interface TaskFile {
  tasks: SubmitTaskRequest[];
  /** lines[i]: the 1-based line number of tasks[i]. */
  lines: number[];
}

/** Parses and checks `text` (the file `name`, for messages). Throws UsageError naming the line and field. */
export function parseTaskFile(text: string, name: string): TaskFile {
  // The server's validator options for bodies (server/app.ts): exact types, closed objects.
  const validate = new Ajv({ coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false, strict: false }).compile(SubmitBody);
  const tasks: SubmitTaskRequest[] = [];
  const lines: number[] = [];
  const all = text.split('\n');
  for (let i = 0; i < all.length; i++) {
    const line = all[i]!.replace(/\r$/, '');
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const at = `${safeText(name)} line ${i + 1}`;
    let v: unknown;
    try {
      v = JSON.parse(trimmed);
    } catch (e) {
      throw new UsageError(`${at}: not JSON (${(e as Error).message})`);
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new UsageError(`${at}: expected a JSON object with the fields of a task (command, args, script, ...)`);
    if (!validate(v)) {
      const { field, reason } = describeValidation({ validation: validate.errors ?? [], validationContext: 'body' });
      throw new UsageError(`${at}: invalid ${field === 'body' ? 'task' : field}: ${reason}`);
    }
    try {
      toTaskSpec(v as SubmitBody);
    } catch (e) {
      if (e instanceof InvalidInputError) throw new UsageError(`${at}: invalid ${e.field}: ${e.reason}`);
      throw e;
    }
    tasks.push(v as SubmitTaskRequest);
    lines.push(i + 1);
  }
  if (tasks.length === 0) throw new UsageError(`${safeText(name)}: no tasks in it (one JSON object per line; blank lines and # comments are skipped)`);
  return { tasks, lines };
}
