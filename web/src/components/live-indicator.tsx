/** The stream's state in words and colour: "Live", "Connecting…", "Reconnecting…". */
import { useLiveStatus } from '../live/live-provider';

const TEXT = { live: 'Live', connecting: 'Connecting…', reconnecting: 'Reconnecting…', stopped: 'Offline' } as const;

export function LiveIndicator() {
  const status = useLiveStatus();
  return (
    <span className={`live-indicator live-${status}`} role="status" aria-live="polite" data-testid="live-status" data-status={status}>
      <span className="live-dot" aria-hidden="true" />
      {TEXT[status]}
    </span>
  );
}
