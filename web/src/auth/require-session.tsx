/** Renders its children only with a session; otherwise sends the user to /sign-in?next=<here>. */
import type { ReactNode } from 'react';
import { Navigate, useLocation } from 'react-router';
import { useMe } from './use-me';
import { SessionContext } from './session-context';
import { ErrorNotice } from '../components/error-notice';
import { FullPageMessage } from '../components/full-page-message';

export function RequireSession({ children }: { children: ReactNode }) {
  const me = useMe();
  const loc = useLocation();
  if (me.isPending) return <FullPageMessage busy>Loading…</FullPageMessage>;
  // Only when there is no answer yet: a failed refresh of a session already known keeps the app on screen.
  if (me.isError && me.data === undefined)
    return (
      <FullPageMessage>
        <ErrorNotice error={me.error} retry={() => void me.refetch()} />
      </FullPageMessage>
    );
  if (!me.data) {
    const next = loc.pathname + loc.search;
    const to = next === '/' ? '/sign-in' : `/sign-in?next=${encodeURIComponent(next)}`;
    return <Navigate to={to} replace />;
  }
  return <SessionContext.Provider value={me.data}>{children}</SessionContext.Provider>;
}
