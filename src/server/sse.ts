/**
 * Server-sent events framing (the WHATWG EventSource format): one event is
 * `event:`, `id:` and `data:` lines and a blank line. Data is one line of
 * JSON (JSON.stringify never emits a raw newline). An id must not contain
 * CR, LF or NUL (the format could not carry it): cursors are checked here.
 */

export function sseEvent(event: string, id: string | null, data: unknown): string {
  return `event: ${event}\n${id !== null ? `id: ${checkedId(id)}\n` : ''}data: ${JSON.stringify(data)}\n\n`;
}

/**
 * A keepalive: a comment line, which EventSource ignores, plus (when given)
 * an `id:` line with no data. Such a block fires no event but does set the
 * EventSource's last event id, so a stream whose subscriber had nothing to
 * receive still resumes from a recent position after a reconnect.
 */
export function sseKeepalive(id: string | null): string {
  return `: ping\n${id !== null ? `id: ${checkedId(id)}\n` : ''}\n`;
}

/** How long EventSource waits before reconnecting (the `retry:` field). */
export function sseRetry(ms: number): string {
  return `retry: ${Math.max(0, Math.floor(ms))}\n\n`;
}

function checkedId(id: string): string {
  if (/[\r\n\0]/.test(id)) throw new Error('an SSE id cannot contain CR, LF or NUL');
  return id;
}
