/**
 * Who is signed in: GET /v1/me. `null` data means "no session" (a 401 here or
 * on any other call sets it, see query-client.ts), and RequireSession sends
 * the user to the sign-in page.
 */
import { useQuery } from '@tanstack/react-query';
import { api } from '../api/endpoints';
import { ApiError } from '../api/api-error';
import { qk } from '../api/query-keys';
import type { Me } from '../api/types';

export function useMe() {
  return useQuery<Me | null>({
    queryKey: qk.me,
    queryFn: async ({ signal }) => {
      try {
        return await api.me(signal);
      } catch (err) {
        if (err instanceof ApiError && err.unauthorized) return null;
        throw err;
      }
    },
    staleTime: 60_000,
    retry: (n, err) => !(err instanceof ApiError) && n < 3,
  });
}
