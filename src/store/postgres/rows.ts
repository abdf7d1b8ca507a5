/**
 * What row mapping PostgreSQL needs beyond the neutral src/store/rows.ts:
 * positional parameters. The pool parses BIGINT to a JS number and BYTEA to a
 * Buffer (db.ts), so a row read here has the shape of a SQLite row and the
 * neutral *FromRow functions map it.
 */
import type { TaskSpec } from '../../core/task.js';
import { taskSpecParams } from '../rows.js';

/**
 * The tasks columns a spec determines and their values, in one order: taken
 * from the neutral taskSpecParams, so a column added there is written here
 * without a second list to keep. The names come from that object's keys (code,
 * never input), so they may be spliced into SQL.
 */
export function taskSpecColumns(spec: TaskSpec): { columns: string[]; values: unknown[] } {
  const params = taskSpecParams(spec);
  return { columns: Object.keys(params), values: Object.values(params) };
}
