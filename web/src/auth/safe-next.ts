/**
 * Where to go after signing in: only a path of this app (starts with one
 * "/", not "//" or "/\", which browsers treat as another host), never a URL.
 */
export function safeNext(next: string | null): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return '/';
  if (next.startsWith('/sign-in')) return '/';
  return next;
}
