/**
 * One WebSocket to "a server", re-established forever until closed.
 *
 * Contract:
 * - Tries the servers in turn (each try uses the next URL), waiting
 *   `reconnectDelay(failures)` between tries. `markHealthy()` (the agent calls
 *   it on `welcome`) resets the failure count, so a flapping server backs
 *   off while a server that was fine for a while is retried at once.
 * - Authenticates the upgrade with `Authorization: Bearer <token>`.
 * - Anything from the server (a message or a pong to our `ping()`) updates
 *   `lastHeardAt`: the agent's liveness check reads it (the lease is
 *   tracked from confirmed heartbeats instead: agent.ts).
 * - Send backpressure: `writable` is false while the socket holds more than
 *   HIGH_WATER bytes not yet handed to the kernel; `onWritable` fires when it
 *   falls below LOW_WATER. The agent sends only while writable, so the
 *   socket's buffer stays bounded whatever the attempts print.
 * - Received frames that are not JSON objects with a string `type` are
 *   logged and dropped.
 */
import WebSocket from 'ws';
import { FRAME_BATCH_CHARS, MAX_MESSAGES_PER_FRAME, packFrames, type AgentMessage, type ServerMessage } from '../core/protocol.js';
import type { Logger } from './logger.js';
import { DEFAULT_BACKOFF, reconnectDelay, type BackoffOptions } from './reconnect-backoff.js';
import { workerConnectUrl } from './server-url.js';

export const SEND_HIGH_WATER = 1024 * 1024;
export const SEND_LOW_WATER = 256 * 1024;

export interface ConnectionHandlers {
  /** The socket is open: say hello. */
  onOpen(): void;
  onMessage(msg: ServerMessage): void;
  /** The socket closed or could not open; a new try is scheduled unless closing. */
  onDown(reason: string): void;
  /** Sending may continue after `writable` was false. */
  onWritable(): void;
}

export interface ConnectionOptions {
  servers: string[];
  token: string;
  logger: Logger;
  backoff?: BackoffOptions;
  handshakeTimeoutMs?: number;
}

export class Connection {
  private ws: WebSocket | null = null;
  private readonly urls: string[];
  private nextUrl = 0;
  private failures = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private closing = false;
  private blocked = false;
  private dropReason: string | null = null;
  /** Epoch ms of the last frame from the server. */
  lastHeardAt = Date.now();
  /** Why the last try failed, for the caller's error message. */
  lastError: string | null = null;

  constructor(
    private readonly opts: ConnectionOptions,
    private readonly handlers: ConnectionHandlers,
  ) {
    if (opts.servers.length === 0) throw new Error('no server URL given');
    this.urls = opts.servers.map(workerConnectUrl);
  }

  start(): void {
    this.connect();
  }

  get isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  get writable(): boolean {
    return this.isOpen && !this.blocked;
  }

  get url(): string | null {
    return this.ws?.url ?? null;
  }

  private maxDelayMs = Number.POSITIVE_INFINITY;

  /**
   * Caps the reconnect delay (the agent sets a quarter of the lease): an agent
   * that backs off longer than its lease while a server restarts loses attempts
   * it could have kept, since the server ends them as lost meanwhile.
   */
  capDelay(maxMs: number): void {
    this.maxDelayMs = Math.max(10, maxMs);
  }

  markHealthy(): void {
    this.failures = 0;
  }

  /**
   * Sends if the socket is open; returns false (and sends nothing) otherwise.
   * Messages sent in one synchronous run share frames, flushed in a microtask
   * (core/protocol.ts framing); a message of FRAME_BATCH_CHARS or more (a log chunk) goes at
   * once in its own frame, after what was queued before it.
   */
  send(msg: AgentMessage): boolean {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    const json = JSON.stringify(msg);
    if (json.length >= FRAME_BATCH_CHARS) {
      this.flushOutbox();
      this.sendFrame(ws, json);
      return true;
    }
    this.outbox.push(json);
    this.outboxChars += json.length;
    if (this.outboxChars >= FRAME_BATCH_CHARS) this.flushOutbox();
    else if (this.outbox.length === 1) queueMicrotask(() => this.flushOutbox());
    return true;
  }

  private readonly outbox: string[] = [];
  private outboxChars = 0;

  private flushOutbox(): void {
    const jsons = this.outbox.splice(0);
    this.outboxChars = 0;
    const ws = this.ws;
    if (jsons.length === 0 || !ws || ws.readyState !== WebSocket.OPEN) return;
    for (const frame of packFrames(jsons)) this.sendFrame(ws, frame);
  }

  private sendFrame(ws: WebSocket, frame: string): void {
    ws.send(frame, () => {
      if (this.blocked && this.ws === ws && ws.bufferedAmount < SEND_LOW_WATER) {
        this.blocked = false;
        this.handlers.onWritable();
      }
    });
    if (ws.bufferedAmount >= SEND_HIGH_WATER) this.blocked = true;
  }

  ping(): void {
    if (this.isOpen) this.ws!.ping();
  }

  /** Drops the current socket at once (a dead peer); the usual reconnect follows. */
  drop(reason: string): void {
    this.dropReason = reason;
    this.ws?.terminate();
  }

  /** Closes for good: no more tries. Waits (briefly) for the close handshake so queued frames go out first. */
  async close(timeoutMs = 2_000): Promise<void> {
    this.closing = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.flushOutbox();
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        ws.terminate();
        resolve();
      }, timeoutMs);
      ws.once('close', () => {
        clearTimeout(t);
        resolve();
      });
      if (ws.readyState === WebSocket.OPEN) ws.close(1000, 'worker shutting down');
      else ws.terminate();
    });
  }

  private connect(): void {
    this.retryTimer = null;
    if (this.closing) return;
    const url = this.urls[this.nextUrl++ % this.urls.length]!;
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${this.opts.token}` },
      handshakeTimeout: this.opts.handshakeTimeoutMs ?? 5_000,
      perMessageDeflate: false,
    });
    this.ws = ws;
    this.blocked = false;
    this.dropReason = null;
    let socketError: string | null = null;
    const heard = () => (this.lastHeardAt = Date.now());
    ws.on('open', () => {
      heard();
      this.opts.logger.info({ url }, 'connected');
      this.handlers.onOpen();
    });
    ws.on('pong', heard);
    ws.on('message', (data, isBinary) => {
      heard();
      const msgs = parse(isBinary ? null : data.toString());
      if (!msgs) {
        this.opts.logger.warn({ url }, 'dropped a malformed frame from the server');
        return;
      }
      for (const msg of msgs) this.handlers.onMessage(msg);
    });
    ws.on('error', (err) => {
      socketError = err.message;
    });
    ws.on('close', (code) => {
      if (this.ws !== ws) return;
      this.ws = null;
      // Messages queued for this socket are not sent on the next one (the agent rewinds after its welcome).
      this.outbox.length = 0;
      this.outboxChars = 0;
      const reason = `${url}: ${this.dropReason ?? socketError ?? `closed (${code})`}`;
      this.lastError = reason;
      this.handlers.onDown(reason);
      if (this.closing) return;
      const backoff = this.opts.backoff ?? DEFAULT_BACKOFF;
      const delay = reconnectDelay(this.failures++, { ...backoff, maxMs: Math.min(backoff.maxMs, this.maxDelayMs) });
      this.retryTimer = setTimeout(() => this.connect(), delay);
    });
  }
}

/** A frame's messages (one object, or an array of them), or null if it is not that shape. */
function parse(text: string | null): ServerMessage[] | null {
  if (text === null) return null;
  const isMessage = (v: unknown) => !!v && typeof v === 'object' && typeof (v as { type?: unknown }).type === 'string';
  try {
    const v: unknown = JSON.parse(text);
    if (Array.isArray(v)) return v.length > 0 && v.length <= MAX_MESSAGES_PER_FRAME && v.every(isMessage) ? (v as ServerMessage[]) : null;
    if (isMessage(v)) return [v as ServerMessage];
  } catch {
    // fall through
  }
  return null;
}
