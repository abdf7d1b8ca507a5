/** A render error inside a route: say so in words, offer a reload. The error's text only, never HTML. */
import { useRouteError } from 'react-router';
import { FullPageMessage } from '../components/full-page-message';

export function RouteError() {
  const err = useRouteError();
  const msg = err instanceof Error ? err.message : typeof err === 'string' ? err : 'unexpected error';
  return (
    <FullPageMessage>
      <h1>The dashboard hit an error</h1>
      <p className="error-text">{msg}</p>
      <button type="button" className="btn" onClick={() => window.location.reload()}>
        Reload
      </button>
    </FullPageMessage>
  );
}
