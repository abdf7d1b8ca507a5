/**
 * `drover submit --from-file FILE|-`: every task of a JSON Lines file
 * (cli/task-file.ts), checked locally as a whole first, then sent in batches of
 * MAX_BATCH_SUBMIT through POST /v1/tasks/batch, one batch at a time, in file
 * order. Prints each task id on its own line as its batch is stored (or, with
 * --json, one JSON array of the stored tasks at the end).
 *
 * Idempotency: one base key per invocation (`--idempotency-key`, or a random
 * one); batch b (1-based) is sent with the key `<base>.<b>`, and the client
 * retries a batch after a 503 or no answer with its key, so a retry never
 * stores a batch twice. If a batch still fails, the batches before it stay
 * stored, and the error says how to rerun the whole file with the base key:
 * the stored batches then answer with their tasks (200) instead of being
 * stored again, and the rest are sent.
 */
import { MAX_BATCH_SUBMIT, type DroverClient } from '../../client/client.js';
import { ApiError } from '../../client/errors.js';
import type { Task } from '../../client/types.js';
import { printJson, safeText } from '../output.js';
import { UsageError } from '../usage-error.js';
import type { TaskFile } from '../task-file.js';

/** The longest base key: a batch's key (`<base>.<b>`) must stay within the server's 255 characters. */
export const MAX_BASE_KEY = 255 - 1 - String(Number.MAX_SAFE_INTEGER).length;

export function batchKey(base: string, batchNo: number): string {
  return `${base}.${batchNo}`;
}

/** Splits the file's tasks into request-sized batches, keeping each item's line number. */
export function batchesOf(file: TaskFile, size = MAX_BATCH_SUBMIT): TaskFile[] {
  const out: TaskFile[] = [];
  for (let i = 0; i < file.tasks.length; i += size) out.push({ tasks: file.tasks.slice(i, i + size), lines: file.lines.slice(i, i + size) });
  return out;
}

/** A server 400 naming `tasks[i]...`, re-worded with the item's line in the file. */
export function lineError(err: ApiError, batch: TaskFile, fileName: string): UsageError | null {
  const m = err.status === 400 && err.field ? /^tasks\[(\d+)\](?:\.(.*))?$/.exec(err.field) : null;
  const line = m ? batch.lines[Number(m[1])] : undefined;
  if (!m || line === undefined) return null;
  return new UsageError(`${safeText(fileName)} line ${line}: invalid ${m[2] ?? 'task'}: ${err.reason ?? err.message}`);
}

export async function submitFile(client: DroverClient, file: TaskFile, fileName: string, baseKey: string, json: boolean): Promise<void> {
  const stored: Task[] = []; // --json: what is printed at the end
  let count = 0; // tasks submitted so far
  const batches = batchesOf(file);
  try {
    for (const [b, batch] of batches.entries()) {
      let res;
      try {
        // Without --json only the ids are printed: the short answer (Prefer: return=minimal) carries them.
        const opts = { idempotencyKey: batchKey(baseKey, b + 1) };
        if (json) {
          res = await client.submitBatch(batch.tasks, opts);
          stored.push(...res.tasks);
        } else res = await client.submitBatchMinimal(batch.tasks, opts);
      } catch (err) {
        const named = err instanceof ApiError ? lineError(err, batch, fileName) : null;
        const done = count ? `; the ${count} tasks of lines ${file.lines[0]}..${file.lines[count - 1]} were submitted` : '';
        const rerun = count ? ` (to submit the rest without repeating them: drover submit --from-file ... --idempotency-key ${baseKey})` : '';
        const wrapped = named ?? err;
        if (wrapped instanceof Error) wrapped.message = `batch ${b + 1} of ${batches.length} not submitted: ${wrapped.message}${done}${rerun}`;
        throw wrapped;
      }
      count += res.tasks.length;
      if (!json) process.stdout.write(res.tasks.map((t) => `${t.id}\n`).join(''));
    }
  } finally {
    if (json) printJson(stored);
  }
}
