/**
 * The server's next fire times for what is typed in the expression and zone
 * fields (GET /v1/cron/next), asked once typing pauses. `fieldError` is a
 * 400 naming `schedule` or `tz`, for the form to show next to that field;
 * it is withheld while the values are still changing, so a half-typed
 * expression's complaint does not flash up mid-word.
 */
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { ApiError } from '../api/api-error';
import { cronNextQuery } from '../api/queries';
import { useDebouncedValue } from '../hooks/use-debounced-value';

const TYPING_PAUSE_MS = 250;
const DEFAULT_TZ = 'UTC';

export function useCronNext(schedule: string, tz: string) {
  const typed = { expr: schedule.trim(), tz: tz.trim() || DEFAULT_TZ };
  const expr = useDebouncedValue(typed.expr, TYPING_PAUSE_MS);
  const zone = useDebouncedValue(typed.tz, TYPING_PAUSE_MS);
  const q = useQuery({ ...cronNextQuery(expr, zone), enabled: expr !== '', placeholderData: keepPreviousData });
  const settled = expr === typed.expr && zone === typed.tz && !q.isPlaceholderData;
  const apiError = q.error instanceof ApiError ? q.error : null;
  const fieldError = settled && apiError && (apiError.field === 'schedule' || apiError.field === 'tz') ? { field: apiError.field, message: apiError.message } : null;
  return {
    /** Nothing typed yet. */
    empty: typed.expr === '',
    /** The answer for the values now in the fields (false while typing or fetching). */
    settled,
    answer: expr !== '' && q.data && !q.isError ? q.data : null,
    fieldError,
    /** Any other failure (no answer, a 5xx). */
    otherError: settled && q.isError && !fieldError ? q.error : null,
  };
}

export type CronNextState = ReturnType<typeof useCronNext>;
