/**
 * Checks that `host:port` can be listened on, before a command creates any
 * file, so that "port in use" leaves nothing behind. The probe's socket is
 * closed at once; the real listen can still lose a race with another process,
 * which the server's own listen error then reports.
 */
import { createServer } from 'node:net';

export function probePort(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen({ host, port, exclusive: true }, () => s.close(() => resolve()));
  });
}
