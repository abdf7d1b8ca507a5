/**
 * Graceful shutdown for the long-running commands (server, worker, dev).
 * The first SIGINT/SIGTERM runs `stop` once and exits 0 when it resolves (1,
 * with the error line, if it throws). A second signal exits 1 at once, so a
 * stuck shutdown can always be interrupted; with `onRepeat` (the worker: stop
 * draining, stop the attempts now) the second signal calls it instead and the
 * third exits 1.
 */

export function onShutdown(stop: (signal: NodeJS.Signals) => Promise<void>, opts: { onRepeat?: (signal: NodeJS.Signals) => void } = {}): void {
  let signals = 0;
  const handler = (signal: NodeJS.Signals) => {
    signals++;
    if (signals === 2 && opts.onRepeat) {
      opts.onRepeat(signal);
      return;
    }
    if (signals > 1) {
      process.stderr.write(`drover: ${signal} again: exiting without finishing shutdown\n`);
      process.exit(1);
    }
    stop(signal).then(
      () => process.exit(0),
      // Loaded only on this path: every CLI start imports this module (exitWithParent).
      (err) => import('./output.js').then(({ printError }) => process.exit(printError(err))),
    );
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}

/**
 * For processes started by tests and benchmarks (env DROVER_EXIT_WITH_PARENT=1):
 * exit when the parent process is gone, so a crashed test run leaves no server
 * or worker behind.
 */
export function exitWithParent(): void {
  if (process.env.DROVER_EXIT_WITH_PARENT !== '1') return;
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.kill(process.pid, 'SIGTERM');
  }, 500).unref();
}
