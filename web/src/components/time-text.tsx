/** A point in time: local time on screen, the full date and ISO time on hover and for assistive tech. */
import { formatFullTime, formatTime } from '../format/time';

export function TimeText({ iso }: { iso: string | null }) {
  if (!iso) return <span className="muted">—</span>;
  return (
    <time dateTime={iso} title={formatFullTime(iso)}>
      {formatTime(iso)}
    </time>
  );
}
