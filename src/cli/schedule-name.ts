/** A schedule name as the server accepts it (server/schedule-schemas.ts SCHEDULE_NAME_PATTERN); kept apart so `ls` need not load the cron core. */
import { safeText } from './output.js';
import { UsageError } from './usage-error.js';

const NAME = /^(?!\.{1,2}$)[A-Za-z0-9._-]{1,100}$/;

/** The name, or UsageError naming `what` (the flag or operand). */
export function parseScheduleName(raw: string, what = 'schedule name'): string {
  if (!NAME.test(raw)) throw new UsageError(`invalid ${what} "${safeText(raw)}": expected 1..100 of A-Z a-z 0-9 . _ -, not . or .. alone`);
  return raw;
}
