/** "4 s ago", re-rendered every second. */
import { formatAge, formatFullTime } from '../format/time';
import { useNow } from '../hooks/use-now';

export function AgeText({ iso }: { iso: string | null }) {
  const now = useNow(1000);
  if (!iso) return <span className="muted">—</span>;
  return (
    <time dateTime={iso} title={formatFullTime(iso)}>
      {formatAge(iso, now)}
    </time>
  );
}
