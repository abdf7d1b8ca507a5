/**
 * Headers on every response the server makes: the dashboard's
 * Content-Security-Policy (no inline scripts or styles, nothing from another
 * origin, no framing), no MIME sniffing, no Referer.
 *
 * Set on the raw response at the start of each request (the first onRequest
 * hook, before authentication), so they are there whatever answers: a route,
 * an error (401/403/404), or a handler that writes the response itself
 * (hijacked streams: Node merges headers set early with writeHead's).
 */
import type { FastifyInstance } from 'fastify';

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** Call before installAuth: hooks run in the order they were added. */
export function installSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onRequest', (_req, reply, done) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) reply.raw.setHeader(name, value);
    done();
  });
}
