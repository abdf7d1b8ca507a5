/**
 * How the client sends a request: on node:http (node:https loaded only for
 * an https URL), not on `fetch`. Measured on this machine: the first `fetch`
 * of a process loads undici and costs about 90 ms of a CLI call's wall time
 * (`node f.mjs` 150 ms vs the same GET on node:http 70 ms, `node -e 0`
 * 60 ms), which alone put `drover ls` at 3 × `node -e 0`.
 *
 * A `fetch` can still be injected (`fetchTransport`), e.g. in a runtime
 * without node:http.
 *
 * Contract of a Transport: resolves once the status and headers arrived;
 * rejects with the system error (its `code`: ECONNREFUSED, ...) when there
 * was no answer, or with an AbortError/TimeoutError when `signal` fired.
 * The body is read once, by `text()` or by iterating `chunks()`.
 */

export interface HttpRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal | null;
}

export interface HttpResponse {
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  header(name: string): string | undefined;
  /** The whole body as UTF-8. */
  text(): Promise<string>;
  /** The body's bytes as they arrive; an error mid-body is thrown from the iteration. */
  chunks(): AsyncIterable<Uint8Array>;
  /** Stops reading and closes the connection. */
  cancel(): void;
}

export type Transport = (req: HttpRequest) => Promise<HttpResponse>;

/** An AbortSignal's reason as the error to throw (TimeoutError for AbortSignal.timeout). */
function abortError(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  if (r instanceof Error) return r;
  const e = new Error('request aborted');
  e.name = 'AbortError';
  return e;
}

/** The default transport: node:http or node:https. */
export const nodeTransport: Transport = async (req) => {
  const u = new URL(req.url);
  const mod = u.protocol === 'https:' ? await import('node:https') : await import('node:http');
  const { signal } = req;
  if (signal?.aborted) throw abortError(signal);
  return new Promise<HttpResponse>((resolve, reject) => {
    const headers: Record<string, string> = { ...req.headers };
    if (req.body !== undefined) headers['content-length'] = String(Buffer.byteLength(req.body));
    const r = mod.request(u, { method: req.method, headers });
    let settled = false;
    const onAbort = () => r.destroy(abortError(signal!));
    signal?.addEventListener('abort', onAbort, { once: true });
    const cleanup = () => signal?.removeEventListener('abort', onAbort);
    r.on('error', (err) => {
      if (!settled) {
        settled = true;
        cleanup();
        reject(signal?.aborted ? abortError(signal) : err);
      }
    });
    r.on('response', (res) => {
      settled = true;
      // The signal keeps covering the body (a JSON call's timeout includes reading it).
      res.on('close', cleanup);
      const status = res.statusCode ?? 0;
      let used = false;
      const take = () => {
        if (used) throw new Error('the response body was already read');
        used = true;
      };
      const fail = (err: unknown) => (signal?.aborted ? abortError(signal) : err);
      resolve({
        status,
        statusText: res.statusMessage ?? '',
        ok: status >= 200 && status < 300,
        header: (name) => {
          const v = res.headers[name.toLowerCase()];
          return Array.isArray(v) ? v.join(', ') : v;
        },
        async text() {
          take();
          const parts: Buffer[] = [];
          try {
            for await (const c of res) parts.push(c as Buffer);
          } catch (err) {
            throw fail(err);
          }
          if (!res.complete) throw Object.assign(new Error('the connection closed before the response ended'), { code: 'ECONNRESET' });
          return Buffer.concat(parts).toString('utf8');
        },
        chunks() {
          take();
          return (async function* () {
            try {
              for await (const c of res) yield c as Buffer;
            } catch (err) {
              throw fail(err);
            }
            if (!res.complete) throw Object.assign(new Error('the connection closed before the response ended'), { code: 'ECONNRESET' });
          })();
        },
        cancel() {
          res.destroy();
          r.destroy();
        },
      });
    });
    r.end(req.body);
  });
};

/** A transport over a `fetch` implementation. */
export function fetchTransport(f: typeof fetch): Transport {
  return async (req) => {
    const res = await f(req.url, { method: req.method, headers: req.headers, ...(req.body !== undefined ? { body: req.body } : {}), ...(req.signal ? { signal: req.signal } : {}) });
    return {
      status: res.status,
      statusText: res.statusText,
      ok: res.ok,
      header: (name) => res.headers.get(name) ?? undefined,
      text: () => res.text(),
      chunks() {
        return (async function* () {
          if (!res.body) return;
          const reader = res.body.getReader();
          try {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) return;
              yield value;
            }
          } finally {
            reader.releaseLock();
          }
        })();
      },
      cancel() {
        void res.body?.cancel().catch(() => {});
      },
    };
  };
}
