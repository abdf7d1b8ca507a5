/**
 * `--wait` for a task this invocation just made (`submit --wait`, `rerun
 * --wait`): streams its log to stdout (to a terminal without the output's
 * escape sequences) until it ends, then sets the exit status the way a shell
 * would (task-exit.ts) and prints the one-line summary on stderr when it did
 * not succeed. With `json`, stdout carries only the final task as JSON.
 *
 * Ctrl-C stops waiting, not the task: it says so, with the cancel command,
 * and exits 130.
 */
import type { DroverClient } from '../client/client.js';
import type { Task } from '../client/types.js';
import { streamLogs, terminalFilter, waitOutcome } from './follow-logs.js';
import { printJson, safeText } from './output.js';

export async function waitForTask(client: DroverClient, task: Task, opts: { json: boolean }): Promise<void> {
  process.once('SIGINT', () => {
    process.stderr.write(`drover: stopped waiting; task ${task.id} keeps running (drover cancel ${task.id} stops it)\n`);
    process.exit(130);
  });
  const out = opts.json ? null : process.stdout;
  const filter = out ? terminalFilter(process.stdout) : undefined;
  const final: Task = (await streamLogs(client, task.id, { follow: true, out, ...(filter ? { filter } : {}) })) ?? task;
  if (opts.json) printJson(final);
  const { exitCode, message } = waitOutcome(final);
  if (message) process.stderr.write(`drover: ${safeText(message)}\n`);
  process.exitCode = exitCode;
}
