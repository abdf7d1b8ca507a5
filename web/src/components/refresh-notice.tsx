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

/**
 * A query's error above what shows its data: RefreshNotice while the query
 * still holds data from an earlier load (a placeholder kept from another
 * key does not count), else `loadTitle` with Try again (it never loaded).
 */
export function QueryErrorNotice({
  query,
  what,
  loadTitle,
}: {
  query: { isError: boolean; error: unknown; refetch: () => unknown; data: unknown; isPlaceholderData: boolean };
  what: string;
  loadTitle: string;
}) {
  if (!query.isError) return null;
  if (query.data !== undefined && !query.isPlaceholderData) return <RefreshNotice query={query} what={what} />;
  return <ErrorNotice error={query.error} retry={() => void query.refetch()} title={loadTitle} />;
}
