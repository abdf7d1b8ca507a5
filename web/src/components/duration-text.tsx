/** A recorded duration, or the time elapsed so far (ticking) while something runs. */
import { elapsedMs, formatDuration } from '../format/duration';
import { useNow } from '../hooks/use-now';

export function DurationText({ startedAt, endedAt, durationMs }: { startedAt: string | null; endedAt: string | null; durationMs: number | null }) {
  if (durationMs !== null || endedAt !== null || startedAt === null) return <span>{formatDuration(elapsedMs(startedAt, endedAt, durationMs, 0))}</span>;
  return <Elapsed startedAt={startedAt} />;
}

function Elapsed({ startedAt }: { startedAt: string }) {
  const now = useNow(1000);
  return <span className="ticking">{formatDuration(elapsedMs(startedAt, null, null, now))}</span>;
}
