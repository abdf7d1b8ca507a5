/** The task's final result in one line: "exit 0 after 1.2 s", "signal SIGKILL", or its error. */
import type { TaskResult } from '../api/types';
import { formatDuration } from '../format/duration';

export function TaskResultText({ result }: { result: TaskResult | null }) {
  if (!result) return <span className="muted">not finished</span>;
  const how = result.signal ? `signal ${result.signal}` : result.exitCode !== null ? `exit ${result.exitCode}` : result.outcome;
  return (
    <span>
      {result.outcome} (attempt {result.attempt}, {how}
      {result.durationMs !== null ? `, ${formatDuration(result.durationMs)}` : ''})
      {result.error && <span className="error-text"> — {result.error}</span>}
    </span>
  );
}
