/**
 * Sign-in with a token, or one click from the link `drover dev` prints
 * (/sign-in#code=…: a short-lived, single-use code in the fragment, which
 * never reaches a server log or a Referer). The fragment is removed from the
 * address bar and history before the code is used, so it is not left behind
 * in the history or copied along with the URL.
 */
import { useEffect, useState, type FormEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Navigate, useNavigate, useSearchParams } from 'react-router';
import { api } from '../api/endpoints';
import { ApiError, errorMessage } from '../api/api-error';
import { qk } from '../api/query-keys';
import { useMe } from '../auth/use-me';
import { safeNext } from '../auth/safe-next';
import { useDocumentTitle } from '../hooks/use-document-title';

/**
 * Reads and removes `#code=` from the address: each code is taken once (it is
 * single-use, and StrictMode runs effects twice), whether it came with the
 * page or was pasted into an open sign-in tab later (hashchange).
 */
function takeFragmentCode(): string | null {
  const m = /^#code=([A-Za-z0-9_-]{1,200})$/.exec(window.location.hash);
  if (window.location.hash) history.replaceState(history.state, '', window.location.pathname + window.location.search);
  return m ? m[1]! : null;
}

export function SignInPage() {
  useDocumentTitle('Sign in');
  const me = useMe();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const next = safeNext(params.get('next'));
  const [token, setToken] = useState('');
  const [codeFailed, setCodeFailed] = useState<string | null>(null);

  const signIn = useMutation({
    mutationFn: (cred: { token: string } | { code: string }) => api.signIn(cred),
    onSuccess: async () => {
      // Another user may have used this tab before: drop everything cached, then learn who we are.
      qc.clear();
      await qc.fetchQuery({ queryKey: qk.me, queryFn: () => api.me() });
      navigate(next, { replace: true });
    },
  });

  useEffect(() => {
    const tryCode = () => {
      const code = takeFragmentCode();
      if (!code) return;
      setCodeFailed(null);
      signIn.mutate(
        { code },
        { onError: (err) => setCodeFailed(err instanceof ApiError && err.status === 401 ? 'This sign-in link has expired or was already used. Sign in with your token, or ask `drover dev` for a new link.' : errorMessage(err)) },
      );
    };
    tryCode();
    window.addEventListener('hashchange', tryCode);
    return () => window.removeEventListener('hashchange', tryCode);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  if (me.data && !signIn.isPending && !signIn.isSuccess) return <Navigate to={next} replace />;

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    setCodeFailed(null);
    if (token.trim()) signIn.mutate({ token: token.trim() });
  };
  const tokenError = signIn.isError && !codeFailed ? signInMessage(signIn.error) : null;

  return (
    <div className="signin">
      <main className="signin-card" id="main">
        <h1 className="signin-brand">
          <span className="brand-mark" aria-hidden="true" /> Drover
        </h1>
        <p className="signin-lead">Sign in to see your tasks, workers and logs.</p>
        {codeFailed && (
          <p className="notice notice-error" role="alert">
            {codeFailed}
          </p>
        )}
        <form onSubmit={onSubmit} noValidate>
          <div className="field">
            <label htmlFor="token">API token</label>
            <input
              id="token"
              name="token"
              type="password"
              autoComplete="current-password"
              spellCheck={false}
              value={token}
              onChange={(e) => setToken(e.target.value)}
              aria-invalid={tokenError ? true : undefined}
              aria-describedby={tokenError ? 'token-error token-hint' : 'token-hint'}
              autoFocus
            />
            {tokenError && (
              <p id="token-error" className="field-error" role="alert">
                {tokenError}
              </p>
            )}
            <p id="token-hint" className="field-hint">
              An admin or user token (<code>drv_…</code>). <code>drover dev</code> wrote one to <code>.drover/credentials.json</code> and prints a one-click sign-in link.
            </p>
          </div>
          <button type="submit" className="btn btn-primary btn-block" disabled={signIn.isPending || !token.trim()}>
            {signIn.isPending ? 'Signing in…' : 'Sign in'}
          </button>
        </form>
        <p className="signin-foot muted">The session lasts 12 hours and ends when you sign out or the token is revoked.</p>
      </main>
    </div>
  );
}

function signInMessage(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.status === 401) return 'This token is not valid (unknown or revoked).';
    if (err.status === 403) return err.message;
  }
  return errorMessage(err);
}
