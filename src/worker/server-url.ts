/** Turns a server's base URL (http, https, ws or wss) into the agents' WebSocket URL. */
import { WORKER_CONNECT_PATH } from '../core/protocol.js';

const SCHEMES: Record<string, string> = { 'http:': 'ws:', 'https:': 'wss:', 'ws:': 'ws:', 'wss:': 'wss:' };

/** Throws on a URL that is not http(s)/ws(s): configuration errors surface at start, not in a reconnect loop. */
export function workerConnectUrl(base: string): string {
  const u = new URL(base);
  const scheme = SCHEMES[u.protocol];
  if (!scheme) throw new Error(`server URL must be http(s):// or ws(s)://, got ${base}`);
  u.protocol = scheme;
  // A base path (a server behind a reverse proxy at /drover/) is kept.
  u.pathname = u.pathname.replace(/\/+$/, '') + WORKER_CONNECT_PATH;
  u.search = '';
  u.hash = '';
  return u.toString();
}
