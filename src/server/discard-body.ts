/**
 * Lingering close for a request body that will not be used (a 413 answer).
 *
 * Fastify answers an over-limit body at once and closes the connection, and
 * a client still writing its body then fails with EPIPE or ECONNRESET before
 * it can read the 413 (seen in CI: a 1.8 MB body against the 1 MiB limit;
 * every time for a Node client that sends `Connection: close`). So the rest
 * of the body is read and dropped first, and the answer goes out once the
 * client has sent it all. Bounded, as a hostile or stalled client may send
 * without end or not at all: the answer goes out (and the connection closes,
 * the rest unread) after `maxBytes` more bytes, after `idleMs` without a
 * byte, or after `maxMs` in all, whichever comes first.
 */
import type { IncomingMessage } from 'node:http';

export interface DrainLimits {
  maxBytes: number;
  idleMs: number;
  maxMs: number;
}

/** Resolves when the body has been read to its end, or a limit was reached; never rejects. */
export function discardBody(req: IncomingMessage, limits: DrainLimits): Promise<void> {
  if (req.complete || req.readableEnded || req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let seen = 0;
    const overall = setTimeout(stop, limits.maxMs);
    let idle = setTimeout(stop, limits.idleMs);
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > limits.maxBytes) return stop();
      clearTimeout(idle);
      idle = setTimeout(stop, limits.idleMs);
    };
    function stop() {
      clearTimeout(overall);
      clearTimeout(idle);
      req.off('data', onData);
      req.off('end', stop);
      req.off('close', stop);
      req.off('error', stop);
      resolve();
    }
    req.on('data', onData);
    req.once('end', stop);
    req.once('close', stop);
    req.once('error', stop);
    req.resume();
  });
}
