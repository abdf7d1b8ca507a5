/**
 * The tab's TanStack Query client. Data is kept fresh by the live stream
 * (live/cache-patcher.ts), so queries do not refetch on window focus; a
 * reconnect of the network refetches. Any 401 clears the session (`me` =
 * null), which sends the tab to the sign-in page.
 */
import { QueryClient } from '@tanstack/react-query';
import { ApiError } from './api/api-error';
import { onUnauthorized } from './api/http';
import { qk } from './api/query-keys';

export function createQueryClient(): QueryClient {
  const qc = new QueryClient({
    defaultOptions: {
      queries: {
        staleTime: 30_000,
        gcTime: 5 * 60_000,
        refetchOnWindowFocus: false,
        retry: (n, err) => (err instanceof ApiError ? err.status >= 500 && n < 2 : n < 3),
      },
      mutations: { retry: false },
    },
  });
  onUnauthorized(() => {
    if (qc.getQueryData(qk.me) !== null) qc.setQueryData(qk.me, null);
  });
  return qc;
}
