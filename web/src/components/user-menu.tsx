/** The signed-in user and role, and Sign out (DELETE /v1/session; the cookie is cleared by the server). */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api } from '../api/endpoints';
import { ApiError } from '../api/api-error';
import { qk } from '../api/query-keys';
import { useSignedIn } from '../auth/session-context';

export function UserMenu() {
  const me = useSignedIn();
  const qc = useQueryClient();
  const signOut = useMutation({
    mutationFn: () => api.signOut(),
    onSettled: (_d, err) => {
      // A 401 means the session was already gone: signed out either way.
      if (err && !(err instanceof ApiError && err.unauthorized)) return;
      // "No session" first: RequireSession stops rendering the pages and is the one
      // place that navigates, to /sign-in?next=<this page> (a second navigation from
      // here would race with it). Then forget the signed-in user's data, so the next
      // user of this tab starts empty.
      qc.setQueryData(qk.me, null);
      qc.removeQueries({ predicate: (q) => q.queryKey[0] !== qk.me[0] });
    },
  });
  return (
    <div className="user-menu">
      <span className="user-name" title={`Signed in as ${me.user} (${me.role})`}>
        {me.user}
        <span className="role-tag">{me.role}</span>
      </span>
      <button type="button" className="btn btn-quiet" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
        {signOut.isPending ? 'Signing out…' : 'Sign out'}
      </button>
      {signOut.isError && !(signOut.error instanceof ApiError && signOut.error.unauthorized) && (
        <span className="inline-error" role="alert">
          Sign-out failed: {signOut.error.message}
        </span>
      )}
    </div>
  );
}
