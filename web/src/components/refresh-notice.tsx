/**
 * A refresh that failed (a 5xx or a network error after its retries: the
 * server or its database restarting, a network blip) while a detail page or
 * an overview widget still holds what it loaded before: the error and Try
 * again above it, and it stays as it was (a log's paged-back place included);
 * nothing once a refresh succeeds. What never loaded shows its own error in
 * its place instead.
 */
import { ErrorNotice } from './error-notice';

export function RefreshNotice({ query, what }: { query: { isError: boolean; error: unknown; refetch: () => unknown }; what: string }) {
  if (!query.isError) return null;
  return <ErrorNotice error={query.error} retry={() => void query.refetch()} title={`Could not refresh ${what}; shown as last loaded`} />;
}
