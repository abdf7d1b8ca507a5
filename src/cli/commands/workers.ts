/** `drover workers`: the worker agents the server knows (admin). */
import { Command } from 'commander';
import type { WorkerInfo } from '../../client/types.js';
import { connect } from '../context.js';
import { formatAge, formatLabels, formatTable, printJson } from '../output.js';

export function formatWorkerTable(workers: readonly WorkerInfo[], now = Date.now()): string {
  return formatTable(
    ['ID', 'HOST', 'STATE', 'SLOTS', 'RUNNING', 'LABELS', 'CONNECTED', 'LAST SEEN'],
    workers.map((w) => [
      w.id,
      w.hostname,
      w.state,
      String(w.slots),
      String(Array.isArray(w.running) ? w.running.length : (w.running ?? 0)),
      formatLabels(w.labels),
      formatAge(w.connectedAt, now),
      formatAge(w.lastSeenAt, now),
    ]),
  );
}

export function workersCommand(): Command {
  return new Command('workers')
    .description('list worker agents (admin)')
    .option('--json', 'print {"workers": [...]} as JSON')
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
