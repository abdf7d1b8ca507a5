/** A friendlier error for a server that cannot bind its port (shared by `server` and `dev`). */
export function listenError(err: unknown, host: string, port: number, hint: string): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'EADDRINUSE') return new Error(`cannot listen on ${host}:${port}: the port is in use (${hint}); pick another with --port`);
  if (code === 'EACCES') return new Error(`cannot listen on ${host}:${port}: permission denied; pick another with --port`);
  if (code === 'EADDRNOTAVAIL') return new Error(`cannot listen on ${host}:${port}: no such address on this machine (--host)`);
  return err;
}
