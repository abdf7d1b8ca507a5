/**
 * DroverClient: a typed client over `fetch` for every route in docs/api.md.
 *
 * Contract:
 * - Every method resolves with the documented payload of a 2xx answer.
 * - A non-2xx answer rejects with `ApiError` (status, code, message, field, reason).
 * - No answer at all rejects with `ConnectionError` ("cannot reach Drover at URL: ECONNREFUSED").
 * - JSON requests time out after `timeoutMs` (default 30 s); `logs()` does not,
 *   because a followed log stays open as long as the task runs.
 */
import { ApiError, ConnectionError, describeFetchFailure } from './errors.js';
import type {
  CreatedToken,
  CreateTokenRequest,
  ListTasksQuery,
  LogsQuery,
  SubmitTaskRequest,
  Task,
  TaskDetail,
  TaskPage,
  Token,
  WorkerInfo,
} from './types.js';

export interface DroverClientOptions {
  /** Base URL, e.g. http://127.0.0.1:7070 (a trailing slash or path prefix is fine). */
  url: string;
  /** Bearer token; without it only `healthz()` works. */
  token?: string | null;
  /** Per-request timeout of JSON calls; 0 disables it. */
  timeoutMs?: number;
  /** Injected for tests; defaults to the global fetch. */
  fetch?: typeof fetch;
}

type Method = 'GET' | 'POST' | 'DELETE';

export class DroverClient {
  readonly url: string;
  private readonly token: string | null;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(opts: DroverClientOptions) {
    this.url = opts.url.replace(/\/+$/, '');
    this.token = opts.token ?? null;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.fetchImpl = opts.fetch ?? globalThis.fetch;
  }

  /** True when the client sends a token (callers word a 401 differently without one). */
  get hasToken(): boolean {
    return this.token !== null && this.token !== '';
  }

  // --- tasks

  async submit(spec: SubmitTaskRequest): Promise<Task> {
    return (await this.json<{ task: Task }>('POST', '/v1/tasks', spec)).task;
  }

  async listTasks(query: ListTasksQuery = {}): Promise<TaskPage> {
    return this.json<TaskPage>('GET', '/v1/tasks' + queryString(query as Record<string, string | number | undefined>));
  }

  /** Every task matching `query`, following `nextCursor` page by page. */
  async *allTasks(query: Omit<ListTasksQuery, 'cursor'> = {}): AsyncGenerator<Task> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.listTasks(cursor === undefined ? query : { ...query, cursor });
      yield* page.tasks;
      if (!page.nextCursor || page.tasks.length === 0) return;
      cursor = page.nextCursor;
    }
  }

  async getTask(id: string): Promise<TaskDetail> {
    return this.json<TaskDetail>('GET', `/v1/tasks/${enc(id)}`);
  }

  /**
   * The task's log as a streaming `Response` (text/plain), already checked to be
   * 2xx. Read `res.body` chunk by chunk; with `follow` it ends when the task is
   * terminal. Pass `signal` to stop early.
   */
  async logs(id: string, query: LogsQuery = {}): Promise<Response> {
    const qs = queryString({ attempt: query.attempt, follow: query.follow ? 1 : undefined });
    const res = await this.send('GET', `/v1/tasks/${enc(id)}/logs${qs}`, undefined, query.signal ?? null);
    if (!res.ok) throw await ApiError.fromResponse(res);
    return res;
  }

  async cancel(id: string): Promise<Task> {
    return (await this.json<{ task: Task }>('POST', `/v1/tasks/${enc(id)}/cancel`)).task;
  }

  async retry(id: string): Promise<Task> {
    return (await this.json<{ task: Task }>('POST', `/v1/tasks/${enc(id)}/retry`)).task;
  }

  // --- tokens (admin)

  async createToken(req: CreateTokenRequest): Promise<CreatedToken> {
    return this.json<CreatedToken>('POST', '/v1/tokens', req);
  }

  async listTokens(): Promise<Token[]> {
    return (await this.json<{ tokens: Token[] }>('GET', '/v1/tokens')).tokens;
  }

  async revokeToken(id: string): Promise<Token> {
    return (await this.json<{ token: Token }>('DELETE', `/v1/tokens/${enc(id)}`)).token;
  }

  // --- workers (admin)

  async listWorkers(): Promise<WorkerInfo[]> {
    return (await this.json<{ workers: WorkerInfo[] }>('GET', '/v1/workers')).workers;
  }

  /** No new work for the worker; its running attempts finish within its drain timeout, the rest run elsewhere. */
  async drainWorker(id: string): Promise<{ workerId: string; draining: boolean }> {
    return this.json<{ workerId: string; draining: boolean }>('POST', `/v1/workers/${enc(id)}/drain`);
  }

  // --- health (no token needed)

  async healthz(): Promise<{ ok: boolean }> {
    return this.json<{ ok: boolean }>('GET', '/healthz');
  }

  // --- plumbing

  private async json<T>(method: Method, path: string, body?: unknown): Promise<T> {
    const signal = this.timeoutMs > 0 ? AbortSignal.timeout(this.timeoutMs) : null;
    const res = await this.send(method, path, body, signal);
    if (!res.ok) throw await ApiError.fromResponse(res);
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw new ConnectionError(this.url, describeFetchFailure(err), { cause: err });
    }
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new ApiError(res.status, { code: 'bad_response', message: `${method} ${path}: the server answered ${res.status} with a body that is not JSON` });
    }
  }

  private async send(method: Method, path: string, body: unknown, signal: AbortSignal | null): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      return await this.fetchImpl(this.url + path, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      throw new ConnectionError(this.url, describeFetchFailure(err), { cause: err });
    }
  }
}

function enc(id: string): string {
  return encodeURIComponent(id);
}

/** `?a=1&b=x` from the defined entries, or '' when there are none. */
function queryString(q: Record<string, string | number | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}
