/**
 * HTTP as a browser (or an attacker) sends it, for the dashboard sign-in
 * tests: the path byte for byte (node:http with a raw `path`), any headers
 * (Cookie, Origin, Host), and every response header returned.
 */
import { request } from 'node:http';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: any;
}

export interface RawOptions {
  headers?: Record<string, string>;
  /** JSON-encoded unless a string. */
  body?: unknown;
  token?: string;
  cookie?: string;
  origin?: string;
}

export function rawRequest(base: string, method: string, path: string, opts: RawOptions = {}): Promise<RawResponse> {
  const u = new URL(base);
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.cookie !== undefined) headers.cookie = opts.cookie;
  if (opts.origin !== undefined) headers.origin = opts.origin;
  const payload = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  if (payload !== undefined) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve, reject) => {
    const req = request({ hostname: u.hostname, port: u.port, method, path, headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let body: any = null;
        try {
          body = JSON.parse(text);
        } catch {
          body = null;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** The `drover_session` value a Set-Cookie header sets (the first one), or null. */
export function sessionFromSetCookie(h: string | string[] | undefined): string | null {
  const all = h === undefined ? [] : Array.isArray(h) ? h : [h];
  for (const line of all) {
    const m = /^drover_session=([^;]*)/.exec(line);
    if (m) return m[1]!;
  }
  return null;
}

/** The one Set-Cookie line of a response (asserting there is exactly one is the caller's business). */
export function setCookieLines(h: string | string[] | undefined): string[] {
  return h === undefined ? [] : Array.isArray(h) ? h : [h];
}

/**
 * A Set-Cookie line as its `name=value` pair and its attributes, sorted: the
 * order of the attributes means nothing (RFC 6265) and is the cookie library's.
 */
export function cookieParts(line: string): { pair: string; attributes: string[] } {
  const [pair, ...attributes] = line.split(/;\s*/);
  return { pair: pair!, attributes: attributes.sort() };
}

/** A response left streaming: its status line, and when (and how) its body ended. */
export interface HeldResponse {
  status: number;
  /** Resolves when the response is over: `clean` is a normal end of the body, false a broken stream. */
  done: Promise<{ clean: boolean; at: number }>;
}

/**
 * Opens `GET path` with `headers` (a bearer token or a cookie); resolves once
 * the status line is in, the body read and dropped as it streams (a followed
 * log, a long poll), so a test can watch how the server ends it.
 */
export function openHeld(base: string, path: string, headers: Record<string, string>): Promise<HeldResponse> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ hostname: u.hostname, port: u.port, path, headers, agent: false }, (res) => {
      const done = new Promise<{ clean: boolean; at: number }>((settle) => {
        let settled = false;
        const finish = (clean: boolean) => {
          if (settled) return;
          settled = true;
          settle({ clean, at: Date.now() });
        };
        res.on('end', () => finish(res.complete));
        res.on('aborted', () => finish(false));
        res.on('error', () => finish(false));
        res.on('close', () => finish(res.complete));
        res.resume();
      });
      resolve({ status: res.statusCode ?? 0, done });
    });
    req.on('error', reject);
    req.end();
  });
}
