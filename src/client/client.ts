/**
 * DroverClient: a typed client for every route in docs/api.md, over node:http
 * by default (http-transport.ts says why not `fetch`).
 *
 * Contract:
 * - Every method resolves with the documented payload of a 2xx answer.
 * - A non-2xx answer rejects with `ApiError` (status, code, message, field, reason).
 * - No answer at all rejects with `ConnectionError` ("cannot reach Drover at URL: ECONNREFUSED").
 * - JSON requests time out after `timeoutMs` (default 30 s); `logs()` and
 *   `stream()` do not, because they stay open as long as there is news, and a
 *   log-chunks long-poll gets its `wait` on top.
 * - Only `submit` and `submitBatch` with an idempotency key are ever retried
 *   (503 and no answer), because only then can a repeat not create a second task.
 */
import { ApiError, ConnectionError, describeFetchFailure } from './errors.js';
import { fetchTransport, nodeTransport, type HttpResponse, type Transport } from './http-transport.js';
import { SseParser } from './sse-parser.js';
import type {
  CountsAnswer,
  CreatedToken,
  CreateTokenRequest,
  ListTasksQuery,
  LogChunkPage,
  LogChunksQuery,
  LogsQuery,
  MinuteStat,
  StreamEvent,
  SubmitTaskRequest,
  Task,
  TaskDetail,
  TaskPage,
  TaskState,
  TaskSummary,
  Token,
  WorkerInfo,
} from './types.js';
import type { CreateScheduleRequest, CronNext, CronNextQuery, ListSchedulesQuery, Schedule, ScheduleDetail, SchedulePage, ScheduleRunNow } from './schedule-types.js';
import type { Dag, DagApplyResult, DagPage, DagRequest, DagRun, DagRunDetail, DagRunPage, ListDagRunsQuery, ListDagsQuery } from './dag-types.js';

/**
 * The server's rule for an Idempotency-Key (src/server/schemas.ts
 * HEADER_RULES): 1..255 visible ASCII characters, 0x21-0x7E.
 */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7E]{1,255}$/;

/** Waits before the retries of an idempotent submit: 3 retries, about 4 s in all. */
export const SUBMIT_RETRY_DELAYS_MS: readonly number[] = [250, 1000, 3000];

export interface SubmitOptions {
  /**
   * Sent as `Idempotency-Key`: a repeat (same key, same body) returns the
   * first task. With a key, a 503 or a request that got no answer is retried
   * with the same key (SUBMIT_RETRY_DELAYS_MS), so it cannot run twice.
   */
  idempotencyKey?: string;
}

export interface SubmitResult {
  task: Task;
  /** False: the server had already created this task for the key (HTTP 200 rather than 201). */
  created: boolean;
}

/** The most tasks one submitBatch takes (the server's limit, src/store/batch.ts MAX_BATCH). */
export const MAX_BATCH_SUBMIT = 1000;

export interface SubmitBatchResult {
  /** In the order given. */
  tasks: Task[];
  /** False: the server had already stored this batch for the key (HTTP 200 rather than 201). */
  created: boolean;
}

/** One task of a short batch answer (submitBatchMinimal): its id and the state it was stored in. */
export interface MinimalTask {
  id: string;
  /** "waiting", or "ready" for a task to run later (runAt / delay). */
  state: TaskState;
}

export interface SubmitBatchMinimalResult {
  /** In the order given. */
  tasks: MinimalTask[];
  /** False: the server had already stored this batch for the key (HTTP 200 rather than 201). */
  created: boolean;
}

export interface DroverClientOptions {
  /** Base URL, e.g. http://127.0.0.1:7070 (a trailing slash or path prefix is fine). */
  url: string;
  /** Bearer token; without it only `healthz()` works. */
  token?: string | null;
  /** Per-request timeout of JSON calls; 0 disables it. */
  timeoutMs?: number;
  /** How requests are sent; default node:http/https (nodeTransport). */
  transport?: Transport;
  /** Send requests with this `fetch` instead (ignored when `transport` is given). */
  fetch?: typeof fetch;
  /** Delays before each retry of an idempotent submit; default SUBMIT_RETRY_DELAYS_MS ([] disables retries). */
  submitRetryDelaysMs?: readonly number[];
}

type Method = 'GET' | 'POST' | 'DELETE';

/** The answer of GET /v1/me. */
export interface Me {
  user: string;
  role: 'admin' | 'user';
  via: 'cookie' | 'bearer';
  expiresAt: string | null;
  /** The id of the token that authenticated the call (as `drover token ls` shows it). */
  tokenId: string;
}

export class DroverClient {
  readonly url: string;
  private readonly token: string | null;
  private readonly timeoutMs: number;
  private readonly transport: Transport;
  private readonly submitRetryDelaysMs: readonly number[];

  constructor(opts: DroverClientOptions) {
    this.url = opts.url.replace(/\/+$/, '');
    this.token = opts.token ?? null;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.transport = opts.transport ?? (opts.fetch ? fetchTransport(opts.fetch) : nodeTransport);
    this.submitRetryDelaysMs = opts.submitRetryDelaysMs ?? SUBMIT_RETRY_DELAYS_MS;
  }

  /** True when the client sends a token (callers word a 401 differently without one). */
  get hasToken(): boolean {
    return this.token !== null && this.token !== '';
  }

  // --- tasks

  async submit(spec: SubmitTaskRequest, opts: SubmitOptions = {}): Promise<Task> {
    return (await this.submitTask(spec, opts)).task;
  }

  /** `submit`, also saying whether this call created the task or found the one its key made before. */
  async submitTask(spec: SubmitTaskRequest, opts: SubmitOptions = {}): Promise<SubmitResult> {
    const { status, body } = await this.idempotentPost<{ task: Task }>('/v1/tasks', spec, opts.idempotencyKey);
    return { task: body.task, created: status === 201 };
  }

  /**
   * POST /v1/tasks/batch: 1..MAX_BATCH_SUBMIT tasks, stored all or nothing,
   * answered in input order. A bad item rejects with ApiError whose `field`
   * names it (`tasks[3].command`). With `idempotencyKey` (one per batch), a
   * 503 or no answer is retried with the same key, as `submitTask` does, so a
   * batch is never stored twice; `created` is false when the key's batch
   * was stored before (HTTP 200).
   */
  async submitBatch(tasks: readonly SubmitTaskRequest[], opts: SubmitOptions = {}): Promise<SubmitBatchResult> {
    const { status, body } = await this.idempotentPost<{ tasks: Task[] }>('/v1/tasks/batch', { tasks }, opts.idempotencyKey);
    return { tasks: body.tasks, created: status === 201 };
  }

  /**
   * `submitBatch` answered short (`Prefer: return=minimal`): each task as its
   * id and state, not the whole task. For a caller that keeps only the ids:
   * the server and this client then build, send and parse a few bytes a
   * task instead of the whole task (about 600 bytes).
   */
  async submitBatchMinimal(tasks: readonly SubmitTaskRequest[], opts: SubmitOptions = {}): Promise<SubmitBatchMinimalResult> {
    const { status, body } = await this.idempotentPost<{ tasks: MinimalTask[] }>('/v1/tasks/batch', { tasks }, opts.idempotencyKey, { prefer: 'return=minimal' });
    return { tasks: body.tasks, created: status === 201 };
  }

  /** A POST that may be repeated when it carries an idempotency key (the class contract). */
  private async idempotentPost<T>(path: string, body: unknown, key: string | undefined, headers: Record<string, string> = {}): Promise<{ status: number; body: T }> {
    if (key === undefined) return this.jsonWithStatus<T>('POST', path, body, headers);
    if (!IDEMPOTENCY_KEY_PATTERN.test(key)) throw new TypeError('idempotencyKey: must be 1..255 visible ASCII characters (0x21-0x7E)');
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.jsonWithStatus<T>('POST', path, body, { ...headers, 'idempotency-key': key });
      } catch (err) {
        // Retryable: the store could not take the write (503), or no answer at
        // all (the submit may or may not have been stored: the key decides).
        const retryable = err instanceof ConnectionError || (err instanceof ApiError && err.status === 503);
        const delay = this.submitRetryDelaysMs[attempt];
        if (!retryable || delay === undefined) throw err;
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  async listTasks(query: ListTasksQuery = {}): Promise<TaskPage> {
    return this.json<TaskPage>('GET', '/v1/tasks' + queryString(query as Record<string, string | number | undefined>));
  }

  /** Every task matching `query` (summary rows), following `nextCursor` page by page. */
  async *allTasks(query: Omit<ListTasksQuery, 'cursor'> = {}): AsyncGenerator<TaskSummary> {
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
   * The task's log as a streaming response (text/plain), already checked to be
   * 2xx. Iterate `res.chunks()` for its bytes; with `follow` it ends when the
   * task is terminal. Pass `signal` to stop early.
   */
  async logs(id: string, query: LogsQuery = {}): Promise<HttpResponse> {
    const qs = queryString({ attempt: query.attempt, follow: query.follow ? 1 : undefined });
    const res = await this.send('GET', `/v1/tasks/${enc(id)}/logs${qs}`, undefined, query.signal ?? null);
    if (!res.ok) throw await ApiError.fromResponse(res);
    return res;
  }

  /**
   * A page of the task's log in chunks: the end (no before/after), the page
   * before a chunk id, or (after + wait) a long-poll for what follows.
   */
  async logChunks(id: string, query: LogChunksQuery = {}): Promise<LogChunkPage> {
    const { signal, ...q } = query;
    const qs = queryString(q);
    const timeout = this.timeoutMs > 0 ? AbortSignal.timeout(this.timeoutMs + (q.wait ?? 0)) : null;
    const sig = signal && timeout ? AbortSignal.any([signal, timeout]) : (signal ?? timeout);
    return (await this.jsonWithStatus<LogChunkPage>('GET', `/v1/tasks/${enc(id)}/log-chunks${qs}`, undefined, {}, sig)).body;
  }

  /**
   * The live stream of changes (`GET /v1/stream`, Server-Sent Events), from
   * `cursor` or the head. One connection, no automatic reconnect: on an end or
   * an error, open another with `cursor: stream.lastEventId` to resume.
   */
  async stream(opts: { cursor?: string; signal?: AbortSignal } = {}): Promise<EventStream> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (opts.cursor !== undefined) headers['last-event-id'] = opts.cursor;
    const res = await this.send('GET', '/v1/stream', undefined, opts.signal ?? null, headers);
    if (!res.ok) throw await ApiError.fromResponse(res);
    return new EventStream(res, opts.cursor ?? null);
  }

  async cancel(id: string): Promise<Task> {
    return (await this.json<{ task: Task }>('POST', `/v1/tasks/${enc(id)}/cancel`)).task;
  }

  async retry(id: string): Promise<Task> {
    return (await this.json<{ task: Task }>('POST', `/v1/tasks/${enc(id)}/retry`)).task;
  }

  /**
   * POST /v1/tasks/:id/rerun: a fresh copy of the task (any state) that runs
   * now, with a new id, owned by the original's owner. With `idempotencyKey`
   * it is retried after a 503 or no answer like `submitTask`, and a repeat
   * returns the first copy (`created` false).
   */
  async rerun(id: string, opts: SubmitOptions = {}): Promise<SubmitResult> {
    const { status, body } = await this.idempotentPost<{ task: Task }>(`/v1/tasks/${enc(id)}/rerun`, undefined, opts.idempotencyKey);
    return { task: body.task, created: status === 201 };
  }

  // --- DAGs (a user: their own; an admin: anyone's, naming `owner` on the per-name calls)

  /** Stores the definition as the DAG's next version, or returns the newest unchanged (created: false). */
  async applyDag(req: DagRequest): Promise<DagApplyResult> {
    const r = await this.json<{ dag: Dag; created?: boolean }>('POST', '/v1/dags', req);
    return { dag: r.dag, created: r.created ?? true };
  }

  async listDags(query: ListDagsQuery = {}): Promise<DagPage> {
    return this.json<DagPage>('GET', '/v1/dags' + queryString(query as Record<string, string | number | undefined>));
  }

  async getDag(name: string, opts: { owner?: string; version?: number } = {}): Promise<Dag> {
    return (await this.json<{ dag: Dag }>('GET', `/v1/dags/${enc(name)}` + queryString(opts))).dag;
  }

  /** Starts a run of the DAG's newest version (never retried: a repeat would be a second run). */
  async runDag(name: string, params: Record<string, string> = {}, owner?: string): Promise<DagRun> {
    return (await this.json<{ run: DagRun }>('POST', `/v1/dags/${enc(name)}/runs` + queryString({ owner }), { params })).run;
  }

  async listDagRuns(query: ListDagRunsQuery = {}): Promise<DagRunPage> {
    return this.json<DagRunPage>('GET', '/v1/dag-runs' + queryString(query as Record<string, string | number | undefined>));
  }

  /** The run, each step's state, timing and outputs, and the critical path. */
  async getDagRun(id: string): Promise<DagRunDetail> {
    return this.json<DagRunDetail>('GET', `/v1/dag-runs/${enc(id)}`);
  }

  async cancelDagRun(id: string): Promise<DagRun> {
    return (await this.json<{ run: DagRun }>('POST', `/v1/dag-runs/${enc(id)}/cancel`)).run;
  }

  async retryDagRun(id: string): Promise<DagRun> {
    return (await this.json<{ run: DagRun }>('POST', `/v1/dag-runs/${enc(id)}/retry`)).run;
  }

  // --- schedules (a user: their own; an admin: anyone's, naming `owner` on the per-name calls)

  async createSchedule(req: CreateScheduleRequest): Promise<Schedule> {
    return (await this.json<{ schedule: Schedule }>('POST', '/v1/schedules', req)).schedule;
  }

  async listSchedules(query: ListSchedulesQuery = {}): Promise<SchedulePage> {
    return this.json<SchedulePage>('GET', '/v1/schedules' + queryString(query as Record<string, string | number | undefined>));
  }

  /** Every schedule matching `query`, following `nextCursor` page by page. */
  async *allSchedules(query: Omit<ListSchedulesQuery, 'cursor'> = {}): AsyncGenerator<Schedule> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.listSchedules(cursor === undefined ? query : { ...query, cursor });
      yield* page.schedules;
      if (!page.nextCursor || page.schedules.length === 0) return;
      cursor = page.nextCursor;
    }
  }

  /** The schedule, its next fire times and its recent runs. */
  async getSchedule(name: string, owner?: string): Promise<ScheduleDetail> {
    return this.json<ScheduleDetail>('GET', `/v1/schedules/${enc(name)}` + queryString({ owner }));
  }

  async pauseSchedule(name: string, owner?: string): Promise<Schedule> {
    return (await this.json<{ schedule: Schedule }>('POST', `/v1/schedules/${enc(name)}/pause` + queryString({ owner }))).schedule;
  }

  async resumeSchedule(name: string, owner?: string): Promise<Schedule> {
    return (await this.json<{ schedule: Schedule }>('POST', `/v1/schedules/${enc(name)}/resume` + queryString({ owner }))).schedule;
  }

  /** A run now, out of schedule (never retried: a repeat would be a second run). */
  /** Run now: the task made, or for a DAG schedule the DAG run started. */
  async runSchedule(name: string, owner?: string): Promise<ScheduleRunNow> {
    return this.json<ScheduleRunNow>('POST', `/v1/schedules/${enc(name)}/run` + queryString({ owner }));
  }

  async deleteSchedule(name: string, owner?: string): Promise<Schedule> {
    return (await this.json<{ deleted: boolean; schedule: Schedule }>('DELETE', `/v1/schedules/${enc(name)}` + queryString({ owner }))).schedule;
  }

  /** GET /v1/cron/next: the next fire times of an expression, computed by the server; nothing is created. */
  async cronNext(query: CronNextQuery): Promise<CronNext> {
    return this.json<CronNext>('GET', '/v1/cron/next' + queryString({ ...query }));
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

  // --- stats (a user: their own tasks; an admin: all, or `owner`)

  async counts(owner?: string): Promise<CountsAnswer> {
    return this.json<CountsAnswer>('GET', '/v1/stats/counts' + queryString({ owner }));
  }

  /** Per-minute activity in [since, until) (ISO times; default the last hour, at most 24 h). */
  async minutes(q: { since?: string; until?: string; owner?: string } = {}): Promise<MinuteStat[]> {
    return (await this.json<{ minutes: MinuteStat[] }>('GET', '/v1/stats/minutes' + queryString(q))).minutes;
  }

  // --- workers (admins and users; drain: admin)

  async listWorkers(): Promise<WorkerInfo[]> {
    return (await this.json<{ workers: WorkerInfo[] }>('GET', '/v1/workers')).workers;
  }

  /** No new work for the worker; its running attempts finish within its drain timeout, the rest run elsewhere. */
  async drainWorker(id: string): Promise<{ workerId: string; draining: boolean }> {
    return this.json<{ workerId: string; draining: boolean }>('POST', `/v1/workers/${enc(id)}/drain`);
  }

  // --- who is calling

  /** GET /v1/me: the caller's user and role, and `tokenId`, the token in use. */
  async me(): Promise<Me> {
    return this.json<Me>('GET', '/v1/me');
  }

  // --- health (no token needed)

  async healthz(): Promise<{ ok: boolean }> {
    return this.json<{ ok: boolean }>('GET', '/healthz');
  }

  // --- plumbing

  private async json<T>(method: Method, path: string, body?: unknown): Promise<T> {
    return (await this.jsonWithStatus<T>(method, path, body)).body;
  }

  private async jsonWithStatus<T>(
    method: Method,
    path: string,
    body?: unknown,
    extraHeaders: Record<string, string> = {},
    signal: AbortSignal | null = this.timeoutMs > 0 ? AbortSignal.timeout(this.timeoutMs) : null,
  ): Promise<{ status: number; body: T }> {
    const res = await this.send(method, path, body, signal, extraHeaders);
    if (!res.ok) throw await ApiError.fromResponse(res);
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw new ConnectionError(this.url, describeFetchFailure(err), { cause: err });
    }
    try {
      return { status: res.status, body: JSON.parse(text) as T };
    } catch {
      throw new ApiError(res.status, { code: 'bad_response', message: `${method} ${path}: the server answered ${res.status} with a body that is not JSON` });
    }
  }

  private async send(method: Method, path: string, body: unknown, signal: AbortSignal | null, extraHeaders: Record<string, string> = {}): Promise<HttpResponse> {
    const headers: Record<string, string> = { accept: 'application/json', ...extraHeaders };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      return await this.transport({ method, url: this.url + path, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}), signal });
    } catch (err) {
      throw new ConnectionError(this.url, describeFetchFailure(err), { cause: err });
    }
  }
}

/**
 * One open stream: iterate it for events (hello first). `lastEventId` is
 * where a new stream resumes without a gap or a repeat (it also moves on
 * keepalives). Iteration ends when the server ends the stream; `close()` ends
 * it from this side.
 */
export class EventStream implements AsyncIterable<StreamEvent> {
  private readonly parser = new SseParser();
  private readonly reader: AsyncIterator<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private readonly queued: StreamEvent[] = [];
  private done = false;

  constructor(
    readonly response: HttpResponse,
    start: string | null,
  ) {
    this.parser.lastEventId = start;
    this.reader = response.chunks()[Symbol.asyncIterator]();
  }

  get lastEventId(): string | null {
    return this.parser.lastEventId;
  }

  /** The next event, or null once the stream has ended. */
  async next(): Promise<StreamEvent | null> {
    while (this.queued.length === 0) {
      if (this.done) return null;
      let chunk: IteratorResult<Uint8Array>;
      try {
        chunk = await this.reader.next();
      } catch {
        chunk = { done: true, value: undefined };
      }
      if (chunk.done) {
        this.done = true;
        this.queued.push(...this.decode(this.parser.push(this.decoder.decode())));
        continue;
      }
      this.queued.push(...this.decode(this.parser.push(this.decoder.decode(chunk.value, { stream: true }))));
    }
    return this.queued.shift()!;
  }

  private decode(msgs: ReturnType<SseParser['push']>): StreamEvent[] {
    return msgs.flatMap((m) => {
      if (m.event !== 'hello' && m.event !== 'changes' && m.event !== 'reset') return [];
      return [{ type: m.event, id: m.id ?? '', ...(JSON.parse(m.data) as object) } as StreamEvent];
    });
  }

  async close(): Promise<void> {
    this.done = true;
    this.response.cancel();
    await this.reader.return?.().catch(() => {});
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<StreamEvent> {
    for (;;) {
      const ev = await this.next();
      if (ev === null) return;
      yield ev;
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
