/**
 * Graceful shutdown for the long-running commands (server, worker, dev).
 * The first SIGINT/SIGTERM runs `stop` once and exits 0 when it resolves (1,
 * with the error line, if it throws). A second signal exits 1 at once, so a
 * stuck shutdown can always be interrupted.
 */
import { printError } from './output.js';

export function onShutdown(stop: (signal: NodeJS.Signals) => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`drover: ${signal} again: exiting without finishing shutdown\n`);
      process.exit(1);
    }
    stopping = true;
    stop(signal).then(
      () => process.exit(0),
      (err) => process.exit(printError(err)),
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
