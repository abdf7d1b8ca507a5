/**
 * Errors the client throws. Callers branch on the class, never on message text:
 * `ApiError` is an HTTP answer from Drover (or something in front of it),
 * `ConnectionError` means no answer at all.
 */

/** The JSON error body of docs/api.md: `{"error": {code, message, field?, reason?}}`. */
export interface ApiErrorBody {
  code: string;
  message: string;
  field?: string;
  reason?: string;
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  /** `invalid_input` etc.; `http_<status>` when the body was not Drover's JSON error. */
  readonly code: string;
  /** For `invalid_input`: the request field at fault, e.g. `retry.maxRetries`. */
  readonly field: string | undefined;
  readonly reason: string | undefined;
  constructor(
    readonly status: number,
    body: ApiErrorBody,
  ) {
    super(body.message);
    this.code = body.code;
    this.field = body.field;
    this.reason = body.reason;
  }

  /**
   * Builds the error from a non-2xx response, consuming its body. Tolerates
   * bodies that are not Drover's (an HTML page from a proxy, an empty body).
   */
  static async fromResponse(res: { status: number; statusText: string; text(): Promise<string> }): Promise<ApiError> {
    let text = '';
    try {
      text = await res.text();
    } catch {
      // The body could not be read; the status alone still says what happened.
    }
    try {
      const parsed = JSON.parse(text) as { error?: Partial<ApiErrorBody> };
      const e = parsed?.error;
      if (e && typeof e.code === 'string') {
        return new ApiError(res.status, {
          code: e.code,
          message: typeof e.message === 'string' && e.message ? e.message : e.code,
          ...(typeof e.field === 'string' ? { field: e.field } : {}),
          ...(typeof e.reason === 'string' ? { reason: e.reason } : {}),
        });
      }
    } catch {
      // Not JSON: fall through.
    }
    const snippet = text.replace(/\s+/g, ' ').trim().slice(0, 200);
    const message = `HTTP ${res.status} ${res.statusText}`.trim() + (snippet ? `: ${snippet}` : '');
    return new ApiError(res.status, { code: `http_${res.status}`, message });
  }
}

/** The request never got an HTTP answer: refused, DNS failure, reset, timeout. */
export class ConnectionError extends Error {
  override readonly name = 'ConnectionError';
  constructor(
    readonly url: string,
    /** The system error code when there is one (ECONNREFUSED, ENOTFOUND, ...), else a short description. */
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super(`cannot reach Drover at ${url}: ${detail}`, options);
  }
}

/**
 * The most specific description of why fetch failed. undici wraps the system
 * error as `TypeError('fetch failed', { cause })`, and the cause may be an
 * AggregateError (one per address tried) whose own code is missing.
 */
export function describeFetchFailure(err: unknown): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) {
    const timeout = err.name === 'TimeoutError' || (err.cause instanceof Error && err.cause.name === 'TimeoutError');
    return timeout ? 'request timed out' : 'request aborted';
  }
  const seen = new Set<unknown>();
  let cur: unknown = err;
  while (cur && typeof cur === 'object' && !seen.has(cur)) {
    seen.add(cur);
    const c = cur as { code?: unknown; errors?: unknown[]; cause?: unknown };
    if (typeof c.code === 'string' && c.code) return c.code;
    const first = Array.isArray(c.errors) ? (c.errors[0] as { code?: unknown } | undefined) : undefined;
    if (first && typeof first.code === 'string') return first.code;
    cur = c.cause;
  }
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? err.cause.message : '';
    return cause || err.message;
  }
  return String(err);
}
