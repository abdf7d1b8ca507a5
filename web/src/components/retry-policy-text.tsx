/** "3 retries, 1 s × 2 up to 1 h (1 s, 2 s, 4 s)". */
import type { RetryPolicy } from '../api/types';
import { formatDuration } from '../format/duration';

export function RetryPolicyText({ retry }: { retry: RetryPolicy }) {
  if (retry.maxRetries === 0) return <span>No retries</span>;
  const delays: string[] = [];
  for (let n = 1; n <= Math.min(retry.maxRetries, 4); n++) delays.push(formatDuration(Math.min(retry.maxDelayMs, retry.baseDelayMs * retry.factor ** (n - 1))));
  return (
    <span>
      {retry.maxRetries} {retry.maxRetries === 1 ? 'retry' : 'retries'}, delay {formatDuration(retry.baseDelayMs)} × {retry.factor} up to {formatDuration(retry.maxDelayMs)}
      <span className="muted"> ({delays.join(', ')}{retry.maxRetries > 4 ? ', …' : ''})</span>
    </span>
  );
}
