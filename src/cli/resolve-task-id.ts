/**
 * Task ids as a person types them: the full 26-character id or a unique
 * prefix of at least MIN_PREFIX characters, in any case. Every command that
 * takes a task id (show, logs, cancel, retry, rerun) goes through
 * `resolveTaskId`:
 *
 * - a full id is upper-cased and used as is (no extra request);
 * - a prefix is looked up with `GET /v1/tasks?id=PREFIX` (the list API's
 *   id-prefix search, which sees only the tasks the caller may see): one
 *   match is the id; none is TaskIdNotFoundError (exit 1); several is
 *   AmbiguousTaskIdError (exit 2) listing up to MAX_LISTED of them with their
 *   name and state;
 * - fewer than MIN_PREFIX characters, or characters no id has, is a
 *   UsageError before any request.
 */
import type { TaskSummary } from '../client/types.js';
import { UsageError } from './usage-error.js';

export const MIN_PREFIX = 6;
export const MAX_LISTED = 10;

/** Crockford base32 as ids use it (no I, L, O, U): the server's TASK_ID_PATTERN (core/ids.ts). */
const FULL_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const PREFIX = /^[0-9A-HJKMNP-TV-Z]{1,26}$/;

/** A prefix matched more than one task: the user must type more of it. */
export class AmbiguousTaskIdError extends UsageError {
  constructor(
    readonly prefix: string,
    readonly matches: readonly Pick<TaskSummary, 'id' | 'name' | 'state'>[],
    more: boolean,
  ) {
    const list = matches.map((t) => `${t.id} (${t.name}, ${t.state})`).join('; ');
    super(`ambiguous task id "${prefix}": it matches ${more ? `more than ${matches.length}` : matches.length} tasks: ${list}${more ? '; ...' : ''} (type more of the id)`);
  }
}

/** No task the caller can see has an id with this prefix. */
export class TaskIdNotFoundError extends Error {
  override readonly name = 'TaskIdNotFoundError';
  constructor(readonly prefix: string) {
    super(`task not found: no task id starts with ${prefix}`);
  }
}

/** What resolveTaskId needs of the client (DroverClient has it). */
export interface TaskLister {
  listTasks(q: { id: string; limit: number }): Promise<{ tasks: Pick<TaskSummary, 'id' | 'name' | 'state'>[] }>;
}

/**
 * Checks the argument's shape: the upper-cased full id, or `{prefix}` to look
 * up. UsageError otherwise, naming `what` ("task id", "run id": DAG run ids
 * are ULIDs too, resolve-dag-run-id.ts).
 */
export function parseTaskIdArg(raw: string, what = 'task id'): { id: string } | { prefix: string } {
  const s = raw.trim().toUpperCase();
  if (FULL_ID.test(s)) return { id: s };
  if (!PREFIX.test(s)) throw new UsageError(`invalid ${what} "${raw}": expected a ${what} or a prefix of one (0-9 and A-Z without I, L, O, U)`);
  if (s.length < MIN_PREFIX) throw new UsageError(`invalid ${what} "${raw}": give the full id or at least ${MIN_PREFIX} characters of it`);
  return { prefix: s };
}

/** The full id that `raw` names (see the file comment). */
export async function resolveTaskId(client: TaskLister, raw: string, what = 'task id'): Promise<string> {
  const parsed = parseTaskIdArg(raw, what);
  if ('id' in parsed) return parsed.id;
  const { tasks } = await client.listTasks({ id: parsed.prefix, limit: MAX_LISTED + 1 });
  if (tasks.length === 1) return tasks[0]!.id;
  if (tasks.length === 0) throw new TaskIdNotFoundError(parsed.prefix);
  throw new AmbiguousTaskIdError(parsed.prefix, tasks.slice(0, MAX_LISTED), tasks.length > MAX_LISTED);
}
