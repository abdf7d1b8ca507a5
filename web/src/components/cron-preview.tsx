/**
 * The next fire times of the expression being typed, as the server computes
 * them (schedules/use-cron-next.ts): each in the schedule's zone (the
 * wall-clock reading the expression describes) and, when that differs, in
 * the browser's. Only the one-line summary is a live region, so a screen
 * reader hears when the expression's answer changes, not every refetch.
 */
import { errorMessage } from '../api/api-error';
import { browserTimeZone, formatFullTime, formatInZone, formatTime } from '../format/time';
import type { CronNextState } from '../schedules/use-cron-next';

export function CronPreview({ state, id }: { state: CronNextState; id: string }) {
  const { answer, empty, settled, fieldError, otherError } = state;
  const local = browserTimeZone();
  const summary = empty
    ? 'Type an expression to see when it fires.'
    : fieldError
      ? 'No fire times: the expression or zone is not valid (see the message at the field).'
      : otherError
        ? `Could not compute the next fire times: ${errorMessage(otherError)}`
        : answer
          ? `Next ${answer.next.length} fire times of ${answer.schedule} in ${answer.tz}`
          : 'Computing the next fire times…';
  const shown = !empty && !fieldError && !otherError ? answer : null;
  return (
    <div className="cron-preview" id={id} data-testid="cron-preview" aria-busy={!settled && !empty}>
      <p className={otherError ? 'cron-preview-summary error-text' : 'cron-preview-summary'} aria-live="polite" aria-atomic="true">
        {summary}
      </p>
      {shown && (
        <ol className={settled ? 'cron-preview-list' : 'cron-preview-list stale'} data-testid="cron-preview-times">
          {shown.next.map((iso) => (
            <li key={iso}>
              <time dateTime={iso} title={formatFullTime(iso)}>
                {formatInZone(iso, shown.tz)}
              </time>
              {shown.tz !== local && <span className="muted"> · {formatTime(iso)} your time</span>}
            </li>
          ))}
        </ol>
      )}
      {shown && shown.next.length === 0 && <p className="muted">It has no more fire times.</p>}
    </div>
  );
}
