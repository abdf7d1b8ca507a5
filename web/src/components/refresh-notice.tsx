/**
 * A detail page's refresh that failed (a 5xx or a network error after its
 * retries: the server or its database restarting, a network blip) while the
 * page still holds what it loaded before: the error and Try again above the
 * page, which stays as it was (a log's paged-back place included); nothing
 * once a refresh succeeds. A page that never loaded shows its own error.
 */
import { ErrorNotice } from './error-notice';

export function RefreshNotice({ query, what }: { query: { isError: boolean; error: unknown; refetch: () => unknown }; what: string }) {
  if (!query.isError) return null;
  return <ErrorNotice error={query.error} retry={() => void query.refetch()} title={`Could not refresh ${what}; showing it as last loaded`} />;
}
