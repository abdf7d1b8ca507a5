/**
 * A random Idempotency-Key. crypto.getRandomValues works on plain-http LAN
 * addresses too (randomUUID needs a secure context).
 */
export function newIdempotencyKey(): string {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return 'web-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}
