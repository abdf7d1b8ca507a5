/**
 * The server side of the worker protocol, played by a test: a real WebSocket
 * server on 127.0.0.1 (port 0) that records what agents send and lets the
 * test answer. Not a mock of the agent: the agent under test is the real one.
 */
import type { IncomingMessage } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import { WORKER_CONNECT_PATH, type AgentMessage, type ServerMessage, type StopOrder } from '../../src/core/protocol.js';

export const TOKEN = 'drv_test_worker_token';

export class FakeConn {
  readonly messages: AgentMessage[] = [];
  /** The same messages as they came, one entry per WebSocket frame. */
  readonly frames: AgentMessage[][] = [];
  private cursor = 0;
  private waiters: Array<() => void> = [];
  /** Ack every log chunk as it arrives. */
  autoAck = false;
  /** Answer every heartbeat with a heartbeat_ack (as a server does once the renewal is stored). */
  answerHeartbeats = true;
  /** The stop orders every heartbeat_ack carries (a server repeats them until the attempts end). */
  stopOrders: StopOrder[] = [];
  readonly closed: Promise<void>;

  constructor(
    readonly ws: WebSocket,
    readonly req: IncomingMessage,
  ) {
    ws.on('message', (data) => {
      // A frame carries one message or an array of them (core/protocol.ts framing).
      const v = JSON.parse(data.toString()) as AgentMessage | AgentMessage[];
      this.frames.push(Array.isArray(v) ? v : [v]);
      for (const msg of Array.isArray(v) ? v : [v]) {
        this.messages.push(msg);
        if (this.autoAck && msg.type === 'log') this.send({ type: 'ack', attemptId: msg.attemptId, seq: msg.seq });
        if (this.answerHeartbeats && msg.type === 'heartbeat') this.send({ type: 'heartbeat_ack', seq: msg.seq, stop: this.stopOrders });
      }
      const w = this.waiters;
      this.waiters = [];
      w.forEach((f) => f());
    });
    this.closed = new Promise((r) => ws.once('close', () => r()));
  }

  send(msg: ServerMessage): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify(msg));
  }

  /**
   * The first message after the previous match that satisfies `pred` (others
   * are skipped). Fails after `timeoutMs` rather than hanging the suite.
   */
  async next<T extends AgentMessage['type']>(
    type: T,
    pred: (m: Extract<AgentMessage, { type: T }>) => boolean = () => true,
    timeoutMs = 10_000,
  ): Promise<Extract<AgentMessage, { type: T }>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      while (this.cursor < this.messages.length) {
        const m = this.messages[this.cursor++]!;
        if (m.type === type && pred(m as Extract<AgentMessage, { type: T }>)) return m as Extract<AgentMessage, { type: T }>;
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no '${type}' message within ${timeoutMs} ms; got ${this.messages.map((m) => m.type).join(',')}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Answers the hello (which it returns) with a welcome. */
  async welcome(opts: { heartbeatMs?: number; leaseMs?: number; stop?: StopOrder[]; prefetchChanges?: boolean } = {}): Promise<Extract<AgentMessage, { type: 'hello' }>> {
    const hello = await this.next('hello');
    this.send({ type: 'welcome', workerId: hello.workerId, heartbeatMs: opts.heartbeatMs ?? 50, leaseMs: opts.leaseMs ?? 5_000, stop: opts.stop ?? [], ...(opts.prefetchChanges !== undefined ? { prefetchChanges: opts.prefetchChanges } : {}) });
    return hello;
  }
}

export class FakeServer {
  private pending: FakeConn[] = [];
  private waiters: Array<(c: FakeConn) => void> = [];
  readonly conns: FakeConn[] = [];
  /** While true, upgrades are refused (401): the agent hears from no server, yet the port stays the same. */
  refuseConnections = false;

  private constructor(
    readonly wss: WebSocketServer,
    readonly url: string,
  ) {
    wss.on('connection', (ws, req) => {
      const c = new FakeConn(ws, req);
      this.conns.push(c);
      const w = this.waiters.shift();
      if (w) w(c);
      else this.pending.push(c);
    });
  }

  static async start(): Promise<FakeServer> {
    let server: FakeServer | null = null;
    const wss = new WebSocketServer({
      host: '127.0.0.1',
      port: 0,
      path: WORKER_CONNECT_PATH,
      verifyClient: (info: { req: IncomingMessage }) => !server?.refuseConnections && info.req.headers.authorization === `Bearer ${TOKEN}`,
    });
    await new Promise<void>((r) => wss.once('listening', () => r()));
    const addr = wss.address();
    if (addr === null || typeof addr === 'string') throw new Error('unexpected address');
    server = new FakeServer(wss, `http://127.0.0.1:${addr.port}`);
    return server;
  }

  /** The next connection an agent opens (in order). */
  nextConnection(): Promise<FakeConn> {
    const c = this.pending.shift();
    if (c) return Promise.resolve(c);
    return new Promise((r) => this.waiters.push(r));
  }

  /** Stops listening and drops every connection. */
  async close(): Promise<void> {
    for (const c of this.wss.clients) c.terminate();
    await new Promise<void>((r) => this.wss.close(() => r()));
  }
}

/** A 127.0.0.1 port with nothing listening (was free a moment ago). */
export async function deadUrl(): Promise<string> {
  const s = await FakeServer.start();
  const url = s.url;
  await s.close();
  return url;
}
