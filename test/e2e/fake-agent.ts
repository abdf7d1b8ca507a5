/**
 * A hand-driven worker agent for end-to-end tests of the protocol's trust
 * boundary: a raw WebSocket speaking the worker protocol (core/protocol.ts) to a real `drover server`,
 * sending exactly what a test (or a hostile client) tells it to.
 */
import { once } from 'node:events';
import WebSocket from 'ws';
import { PROTOCOL_VERSION, WORKER_CONNECT_PATH, type AgentMessage, type ServerMessage } from '../../src/core/protocol.js';

export class FakeAgent {
  readonly received: ServerMessage[] = [];
  closeCode: number | null = null;
  closeReason = '';
  private waiters: Array<() => void> = [];
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      // A frame carries one message or an array of them (core/protocol.ts framing).
      const v = JSON.parse(d.toString()) as ServerMessage | ServerMessage[];
      this.received.push(...(Array.isArray(v) ? v : [v]));
      this.wake();
    });
    ws.on('close', (code, reason) => {
      this.closeCode = code;
      this.closeReason = reason.toString();
      this.wake();
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    w.forEach((f) => f());
  }

  /** Opens the socket; rejects with the HTTP status if the upgrade is refused. */
  static async connect(url: string, token: string, path = WORKER_CONNECT_PATH): Promise<FakeAgent> {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + path, { headers: { authorization: `Bearer ${token}` } });
    const status = new Promise<never>((_, reject) => ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode }))));
    status.catch(() => {});
    await Promise.race([once(ws, 'open'), status]);
    return new FakeAgent(ws);
  }

  send(msg: AgentMessage | Record<string, unknown>): void {
    this.ws.send(JSON.stringify(msg));
  }

  hello(
    workerId: string,
    o: { slots?: number; prefetch?: number; running?: Array<{ attemptId: number; fencingToken: string }>; killed?: Array<{ attemptId: number; fencingToken: string; reason: string }>; labels?: Record<string, string>; draining?: boolean } = {},
  ): void {
    this.send({
      type: 'hello',
      workerId,
      hostname: 'fake',
      slots: o.slots ?? 1,
      ...(o.prefetch !== undefined ? { prefetch: o.prefetch } : {}),
      labels: o.labels ?? {},
      version: PROTOCOL_VERSION,
      running: o.running ?? [],
      ...(o.killed ? { killed: o.killed } : {}),
      ...(o.draining !== undefined ? { draining: o.draining } : {}),
    });
  }

  /** Resolves with the first received message (from index `from`) that matches, or rejects after timeoutMs. */
  async next<T extends ServerMessage['type']>(type: T, timeoutMs = 10_000, pred: (m: Extract<ServerMessage, { type: T }>) => boolean = () => true): Promise<Extract<ServerMessage, { type: T }>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = this.received.find((x): x is Extract<ServerMessage, { type: T }> => x.type === type && pred(x as Extract<ServerMessage, { type: T }>));
      if (m) {
        this.received.splice(this.received.indexOf(m), 1);
        return m;
      }
      if (this.closeCode !== null) throw new Error(`socket closed (${this.closeCode} ${this.closeReason}) while waiting for ${type}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${type} within ${timeoutMs} ms; got ${JSON.stringify(this.received.map((x) => x.type))}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  async closed(timeoutMs = 5_000): Promise<{ code: number; reason: string }> {
    if (this.closeCode === null) {
      await Promise.race([once(this.ws, 'close'), new Promise((r) => setTimeout(r, timeoutMs))]);
    }
    if (this.closeCode === null) throw new Error('socket still open');
    return { code: this.closeCode, reason: this.closeReason };
  }

  close(): void {
    this.ws.terminate();
  }
}
