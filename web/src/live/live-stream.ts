/**
 * The tab's one connection to GET /v1/stream (server-sent events).
 *
 * Resume: EventSource reconnects by itself after a dropped connection and
 * sends the last `id:` it saw as Last-Event-ID, so the server continues after
 * the last batch this tab applied: nothing missed, nothing twice. When the
 * EventSource gives up (the server answered with an error status, e.g. 401
 * after a sign-out, 429 over the per-token cap), this class opens a new one
 * after a backoff with `?cursor=` set to the last cursor, which the server
 * treats like Last-Event-ID.
 */
export type LiveStatus = 'connecting' | 'live' | 'reconnecting' | 'stopped';

export interface LiveHandlers {
  hello(cursor: string, first: boolean): void;
  changes(data: unknown): void;
  reset(data: unknown): void;
  /** The EventSource closed for good; resolve true to try again, false to stop (e.g. signed out). */
  closed(): Promise<boolean>;
}

const BACKOFF_MS = [1000, 2000, 5000, 10000, 30000];

export class LiveStream {
  private es: EventSource | null = null;
  private cursor: string | null = null;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private failures = 0;
  private helloSeen = false;
  private status: LiveStatus = 'stopped';
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly handlers: LiveHandlers,
    private readonly path = '/v1/stream',
  ) {}

  getStatus = (): LiveStatus => this.status;

  subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };

  start(): void {
    if (this.es || this.retryTimer) return;
    this.open();
  }

  stop(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.es?.close();
    this.es = null;
    this.setStatus('stopped');
  }

  private open(): void {
    this.retryTimer = null;
    const url = this.cursor ? `${this.path}?cursor=${encodeURIComponent(this.cursor)}` : this.path;
    const es = new EventSource(url, { withCredentials: false });
    this.es = es;
    this.setStatus(this.helloSeen ? 'reconnecting' : 'connecting');
    es.addEventListener('hello', (ev) => {
      const data = parse(ev);
      const cursor = isObj(data) && typeof data.cursor === 'string' ? data.cursor : ev.lastEventId;
      this.cursor = cursor || this.cursor;
      this.failures = 0;
      const first = !this.helloSeen;
      this.helloSeen = true;
      this.setStatus('live');
      this.handlers.hello(cursor, first);
    });
    es.addEventListener('changes', (ev) => {
      const data = parse(ev);
      if (isObj(data) && typeof data.cursor === 'string') this.cursor = data.cursor;
      else if (ev.lastEventId) this.cursor = ev.lastEventId;
      this.handlers.changes(data);
    });
    es.addEventListener('reset', (ev) => {
      const data = parse(ev);
      if (isObj(data) && typeof data.cursor === 'string') this.cursor = data.cursor;
      this.handlers.reset(data);
    });
    es.addEventListener('error', () => {
      if (es !== this.es) return;
      if (es.readyState === EventSource.CONNECTING) {
        this.setStatus('reconnecting');
        return;
      }
      // CLOSED: the browser will not retry this one.
      es.close();
      this.es = null;
      this.setStatus('reconnecting');
      const delay = BACKOFF_MS[Math.min(this.failures, BACKOFF_MS.length - 1)]!;
      this.failures++;
      void this.handlers.closed().then((again) => {
        if (!again) return this.stop();
        if (this.status === 'stopped') return;
        this.retryTimer = setTimeout(() => this.open(), delay);
      });
    });
  }

  private setStatus(s: LiveStatus): void {
    if (s === this.status) return;
    this.status = s;
    for (const fn of this.listeners) fn();
  }
}

function parse(ev: Event): unknown {
  try {
    return JSON.parse((ev as MessageEvent<string>).data);
  } catch {
    return null;
  }
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}
