/** A centred message for states before the layout exists (loading the session, fatal errors). */
import type { ReactNode } from 'react';

export function FullPageMessage({ children, busy = false }: { children: ReactNode; busy?: boolean }) {
  return (
    <div className="full-page" aria-busy={busy}>
      <div className="full-page-box">{children}</div>
    </div>
  );
}
