/**
 * The one fetch wrapper: same-origin requests with the session cookie (the
 * browser adds it and, for POST/DELETE, the Origin header the server checks),
 * JSON in and out, and every non-2xx turned into an ApiError. A 401 anywhere
 * means the session is gone (signed out elsewhere, expired, token revoked):
 * listeners registered with onUnauthorized send the user to the sign-in page.
 */
import { ApiError, NetworkError } from './api-error';

type Query = Record<string, string | number | boolean | undefined | null>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

const unauthorizedListeners = new Set<() => void>();

export function onUnauthorized(fn: () => void): () => void {
  unauthorizedListeners.add(fn);
  return () => unauthorizedListeners.delete(fn);
}

export function withQuery(path: string, query: Query | undefined): string {
  if (!query) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

export async function request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
  let body: string | undefined;
  if (opts.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  let res: Response;
  try {
    res = await fetch(withQuery(path, opts.query), { method, headers, body, credentials: 'same-origin', signal: opts.signal, cache: 'no-store' });
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    throw new NetworkError(err);
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (!res.ok) {
    const e = (json as { error?: { code?: unknown; message?: unknown; field?: unknown; reason?: unknown } } | null)?.error;
    const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
    const err = new ApiError(res.status, str(e?.code) ?? `http_${res.status}`, str(e?.message) ?? `${res.status} ${res.statusText}`, str(e?.field), str(e?.reason));
    if (res.status === 401) for (const fn of unauthorizedListeners) fn();
    throw err;
  }
  return json as T;
}
