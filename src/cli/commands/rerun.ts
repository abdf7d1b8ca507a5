/**
 * `drover rerun ID [--wait] [--json]`: a fresh copy of a task (any state,
 * succeeded included) that runs now: same spec, a new id, owned by the
 * original's owner (POST /v1/tasks/:id/rerun). Prints the new id (or the new
 * task as JSON). With --wait it follows the copy as `submit --wait` does and
 * exits with its status.
 *
 * Every rerun carries an Idempotency-Key (`--idempotency-key K`, or a random
 * one for this invocation), so the client's retry after a 503 or a lost
 * answer never makes two copies.
 */
import { Command } from '../commander.js';
import { connect } from '../context.js';
import { printJson } from '../output.js';
import { resolveTaskId } from '../resolve-task-id.js';
import { waitForTask } from '../wait-task.js';
import { idempotencyKeyOf } from './submit.js';

export function rerunCommand(): Command {
  return new Command('rerun')
    .description('run a fresh copy of a task (any state, succeeded included) now; prints the new task\'s id')
    .argument('<id>', 'task id, or a unique prefix of 6+ characters (any case)')
    .option('--wait', 'stream the new task\'s log, then exit with its exit status')
    .option('--json', 'print the new task as JSON (with --wait: the final task)')
    .option('--idempotency-key <key>', 'repeating the rerun with the same key returns the first copy (default: a random key per rerun)')
    .action(async (rawId: string, flags: { wait?: boolean; json?: boolean; idempotencyKey?: string }, cmd: Command) => {
      const idempotencyKey = idempotencyKeyOf(flags);
      const client = connect(cmd);
      const id = await resolveTaskId(client, rawId);
      const { task } = await client.rerun(id, { idempotencyKey });
      if (!flags.wait) {
        if (flags.json) printJson(task);
        else process.stdout.write(`${task.id}\n`);
        return;
      }
      process.stderr.write(`drover: rerun of ${id}: task ${task.id}\n`);
      await waitForTask(client, task, { json: flags.json === true });
    });
}
