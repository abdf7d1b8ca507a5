/**
 * What `drover dag apply` refuses before sending a file, because only the
 * file's author can say what was meant: a duration given as a bare number.
 * The API reads `timeout: 30` as 30 milliseconds (its durations are integer
 * milliseconds or strings with a unit), while a person writing YAML usually
 * means 30 seconds, as every CLI duration flag reads it. So in a file the
 * unit is required: `30s`, `30000ms`, `5m`, `1h30m`. Quoted digits ("30") are
 * the same ambiguity and refused too.
 *
 * Everything else (unknown fields, missing commands, cycles, ...) is the
 * server's to judge: its 400 is printed as the file spells the field
 * (dag-file-errors.ts), so the rules live in one place.
 */
import type { DagFile } from './dag-file.js';
import { DagFileError } from './dag-file.js';
import { describeFieldError, valueAt } from './dag-file-errors.js';

/** The duration fields of a step (a POST /v1/tasks body without runAt/delay). */
export const STEP_DURATION_FIELDS: ReadonlyArray<readonly string[]> = [['timeout'], ['retry', 'baseDelay'], ['retry', 'maxDelay']];

const BARE = /^\s*\d+(\.\d+)?\s*$/;

export function checkDagFile(file: DagFile): void {
  const steps = valueAt(file.body, ['steps']);
  if (!Array.isArray(steps)) return; // the server names what is wrong with it
  steps.forEach((_, i) => {
    for (const f of STEP_DURATION_FIELDS) {
      const path = ['steps', i, ...f];
      const v = valueAt(file.body, path);
      if (typeof v === 'number' || (typeof v === 'string' && BARE.test(v))) {
        const n = String(v).trim();
        throw new DagFileError(describeFieldError(file, path, `a bare number (${JSON.stringify(v)}) is ambiguous: give a unit, ${n}s for seconds or ${n}ms for milliseconds`));
      }
    }
  });
}
