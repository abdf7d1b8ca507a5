/** `drover workers`: the worker agents the server knows (admins and users; a user sees only their own tasks among the running ones). */
import { Command } from '../commander.js';
import type { WorkerInfo } from '../../client/types.js';
import { connect } from '../context.js';
import { UsageError } from '../usage-error.js';
import { formatAge, formatLabels, formatTable, printJson } from '../output.js';

export function formatWorkerTable(workers: readonly WorkerInfo[], now = Date.now()): string {
  return formatTable(
    ['ID', 'HOST', 'STATE', 'SLOTS', 'RUNNING', 'LABELS', 'CONNECTED', 'LAST SEEN'],
    workers.map((w) => [
      w.id,
      w.hostname,
      w.state,
      `${w.slotsUsed}/${w.slots}`,
      String(w.runningAttempts.length),
      formatLabels(w.labels),
      formatAge(w.connectedAt, now),
      formatAge(w.lastSeenAt, now),
    ]),
  );
}

const WORKER_ID = /^[A-Za-z0-9._:-]{1,100}$/;

export function workersCommand(): Command {
  const drain = new Command('drain')
    .description('drain a worker (admin): it takes no new work; running attempts finish within its drain timeout, the rest run elsewhere')
    .argument('<id>', 'worker id, as listed by drover workers')
    .action(async (id: string, _flags: unknown, cmd: Command) => {
      if (!WORKER_ID.test(id)) throw new UsageError(`invalid worker id "${id}": expected 1-100 of A-Z a-z 0-9 . _ : -`);
      await connect(cmd).drainWorker(id);
      process.stdout.write(`${id}: draining\n`);
    });
  return new Command('workers')
    .description('list worker agents: state, slots used/total, running tasks (yours only, unless admin); `drover workers drain ID` drains one (admin)')
    .option('--json', 'print {"workers": [...]} as JSON')
    .addCommand(drain)
    .action(async (flags: { json?: boolean }, cmd: Command) => {
      const workers = await connect(cmd).listWorkers();
      if (flags.json) return printJson({ workers });
      if (!workers.length) {
        process.stderr.write('no workers\n');
        return;
      }
      process.stdout.write(formatWorkerTable(workers));
    });
}
