/**
 * Read and act on tasks: `ls`, `show`, `logs`, `cancel`, `retry`.
 * Ids and filters are validated before any request (exit 2 on bad input).
 */
import { ENDED_ORDER_STATES } from '../../core/task-state.js';
import { Command } from '../commander.js';
import type { ListTasksQuery, TaskDetail, TaskSummary } from '../../client/types.js';
export { formatTaskTable } from '../task-table.js';
import { connect } from '../context.js';
import { paint, stateStyle, stdoutColour } from '../colour.js';
import { formatAge, formatExit, formatLabels, formatMs, formatTable, formatTime, printJson, safeText, shellQuote } from '../output.js';
import { parseIntFlag, parseTaskState } from '../parse.js';
import { resolveTaskId } from '../resolve-task-id.js';
import { formatTaskTable } from '../task-table.js';
import { terminalWidth } from '../terminal-width.js';
import { UsageError } from '../usage-error.js';
import { describeSkipReason } from '../skip-reason.js';
import { parseScheduleName } from '../schedule-name.js';

interface LsFlags {
  state?: string;
  name?: string;
  owner?: string;
  id?: string;
  schedule?: string;
  limit?: string;
  order?: string;
  all?: boolean;
  json?: boolean;
  wide?: boolean;
}

/** Crockford base32 as task ids use it (no I, L, O, U), either case: the server's rule for `id`. */
const ID_PREFIX = /^[0-9A-HJKMNP-TV-Z]{1,26}$/i;

export function parseIdPrefix(flag: string, raw: string): string {
  if (!ID_PREFIX.test(raw)) throw new UsageError(`invalid ${flag} "${raw}": expected 1..26 characters of a task id (0-9 and A-Z without I, L, O, U)`);
  return raw.toUpperCase();
}

function nonEmpty(flag: string, raw: string, what: string): string {
  if (raw === '') throw new UsageError(`invalid ${flag} "": expected ${what}`);
  return raw;
}

/** --order: created (the default) or ended, which the server answers only for --state failed or cancelled. */
function parseListOrder(raw: string, state: ListTasksQuery['state']): 'created' | 'ended' {
  if (raw !== 'created' && raw !== 'ended') throw new UsageError(`invalid --order "${raw}": expected created or ended`);
  if (raw === 'ended' && (state === undefined || !ENDED_ORDER_STATES.includes(state))) {
    throw new UsageError(`--order ended needs ${ENDED_ORDER_STATES.map((s) => `--state ${s}`).join(' or ')}`);
  }
  return raw;
}

export function buildListQuery(f: LsFlags): ListTasksQuery {
  const q: ListTasksQuery = {};
  if (f.state !== undefined) q.state = parseTaskState('--state', f.state);
  // An empty filter would be dropped from the query string and match everything: refused, as --id "" is.
  if (f.name !== undefined) q.name = nonEmpty('--name', f.name, 'a name prefix');
  if (f.owner !== undefined) q.owner = nonEmpty('--owner', f.owner, 'a user name');
  if (f.id !== undefined) q.id = parseIdPrefix('--id', f.id);
  if (f.schedule !== undefined) q.schedule = parseScheduleName(f.schedule, '--schedule');
  if (f.limit !== undefined) q.limit = parseIntFlag('--limit', f.limit, 1, 500);
  if (f.order !== undefined) q.order = parseListOrder(f.order, q.state);
  return q;
}

export function lsCommand(): Command {
  return new Command('ls')
    .description('list tasks, newest first')
    .option('--state <state>', 'only tasks in this state (ready, waiting, running, retrying, succeeded, failed, cancelled, skipped)')
    .option('--name <prefix>', 'only tasks whose name starts with this')
    .option('--owner <user>', 'only this user\'s tasks (admins)')
    .option('--id <prefix>', 'only tasks whose id starts with this (1..26 characters of the id, any case)')
    .option('--schedule <name>', 'only the runs of this schedule (yours; with --owner, that user\'s)')
    .option('--limit <n>', 'page size, 1..500 (default 50)')
    .option('--order <order>', 'created (default: newest created first) or ended (newest end first; with --state failed or cancelled)')
    .option('--all', 'follow the cursors and list every matching task')
    .option('--wide', 'full task ids, names and workers (default: fit the terminal: ids shortened to a prefix that tells them apart, or, for ids of one batch alike in their first 16 characters, their first 12 and …)')
    .option('--json', 'print {"tasks": [...], "nextCursor": ...} as JSON (full ids)')
    .action(async (flags: LsFlags, cmd: Command) => {
      const query = buildListQuery(flags);
      const client = connect(cmd);
      let tasks: TaskSummary[];
      let nextCursor: string | null = null;
      if (flags.all) {
        tasks = [];
        for await (const t of client.allTasks(query)) tasks.push(t);
      } else {
        ({ tasks, nextCursor } = await client.listTasks(query));
      }
      if (flags.json) return printJson({ tasks, nextCursor });
      if (!tasks.length) {
        process.stderr.write('no tasks\n');
        return;
      }
      process.stdout.write(formatTaskTable(tasks, { width: terminalWidth(), wide: flags.wide === true, colour: stdoutColour() }));
      if (nextCursor) process.stderr.write(`(more tasks: use --all or a larger --limit)\n`);
    });
}

export function formatTaskDetail(d: TaskDetail, now = Date.now(), colour = false): string {
  const t = d.task;
  const what = t.command !== null ? [t.command, ...t.args].map(shellQuote).join(' ') : `script via ${(t.interpreter.length ? t.interpreter : ['sh']).join(' ')}`;
  const fields: Array<[string, string]> = [
    ['id', t.id],
    ['name', t.name],
    ['owner', t.owner],
    ['state', t.state],
    ['run', what],
    ['env', Object.keys(t.env).length ? Object.keys(t.env).join(',') + (t.envRedacted ? ' (values only for the owner)' : '') : '-'],
    ['labels', formatLabels(t.labels)],
    ['requires', formatLabels(t.requires)],
    ['priority', String(t.priority)],
    ['timeout', formatMs(t.timeoutMs)],
    ['retry', `${t.retriesUsed}/${t.retry.maxRetries} used, base ${formatMs(t.retry.baseDelayMs)}, x${t.retry.factor}, cap ${formatMs(t.retry.maxDelayMs)}`],
    ['attempts', `${t.attempts}${t.lostCount ? ` (${t.lostCount} lost)` : ''}`],
    ['created', `${formatTime(t.createdAt)} (${formatAge(t.createdAt, now)} ago)`],
    ['updated', formatTime(t.updatedAt)],
  ];
  if (t.runAfter) fields.push(['run after', formatTime(t.runAfter)]);
  if (t.scheduleId) fields.push(['schedule', `${t.scheduleId}${t.scheduledAt ? `, slot ${formatTime(t.scheduledAt)}` : ' (run now, no slot)'}`]);
  // A DAG step, like a schedule's slot: its run and step (drover dag status RUN shows the whole run), and why it was skipped.
  if (t.dagRunId) fields.push(['dag run', `${t.dagRunId}, step ${t.dagStep ?? '?'}`]);
  if (t.skipReason) fields.push(['skipped', describeSkipReason(t.skipReason)]);
  if (t.result) {
    const r = t.result;
    const parts = [r.outcome, `attempt ${r.attempt}`];
    if (r.exitCode !== null) parts.push(`exit ${r.exitCode}`);
    if (r.signal) parts.push(`signal ${r.signal}`);
    if (r.durationMs !== null) parts.push(formatMs(r.durationMs));
    if (r.error) parts.push(`error: ${r.error}`);
    fields.push(['result', parts.join(', ')]);
  } else {
    fields.push(['result', '-']);
  }
  const width = Math.max(...fields.map(([k]) => k.length));
  // Values are task data: escaped, so one field stays one line and no escape sequence reaches the terminal.
  let out = fields.map(([k, v]) => `${(k + ':').padEnd(width + 1)} ${k === 'state' && colour ? paint(safeText(v), stateStyle(v)) : safeText(v)}`).join('\n') + '\n';

  // Outputs (DROVER_OUTPUT) as the task wrote them, one KEY=VALUE a line; values are task data, escaped like the rest.
  const outputs = Object.entries(t.outputs ?? {});
  if (outputs.length > 0) out += '\nOUTPUTS\n' + outputs.map(([k, v]) => `${safeText(k)}=${safeText(v)}\n`).join('');

  out += '\nATTEMPTS\n';
  out += d.attempts.length
    ? formatTable(
        ['#', 'WORKER', 'STATE', 'EXIT', 'STARTED', 'DURATION', 'ERROR'],
        d.attempts.map((a) => [String(a.number), a.workerId, a.state, a.state === 'timed_out' ? 'timeout' : formatExit(a), formatTime(a.startedAt), formatMs(a.durationMs), a.error ?? '']),
        colour ? (r, c) => (c === 2 ? stateStyle(attemptColourState(d.attempts[r]!.state)) : null) : undefined,
      )
    : '(none)\n';

  out += '\nEVENTS\n';
  out += d.events.length
    ? formatTable(
        ['FROM', 'TO', 'REASON', 'ACTOR', 'TIME', 'DETAIL'],
        d.events.map((e) => [e.from ?? '-', e.to, e.reason, e.actor, formatTime(e.at), formatDetail(e.detail)]),
        colour ? (r, c) => (c === 1 ? stateStyle(d.events[r]!.to) : null) : undefined,
      )
    : '(none)\n';
  return out;
}

/** An attempt's state coloured as the task state it resembles. */
function attemptColourState(state: string): string {
  return state === 'timed_out' || state === 'lost' ? 'failed' : state;
}

/** Epoch-ms values in event details (runAfter, ...) within these years are shown as ISO times. */
const EPOCH_MS_MIN = Date.UTC(2000, 0, 1);
const EPOCH_MS_MAX = Date.UTC(2200, 0, 1);
const TIME_KEY = /(At|After|Before|Until|Time|Deadline|Expires)$/;

/** `k=v` pairs; a time-named key holding epoch milliseconds prints as an ISO time (`runAfter=2026-12-01T12:00:00Z`). */
export function formatDetail(detail: Record<string, unknown> | null): string {
  if (!detail) return '';
  return Object.entries(detail)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => {
      if (typeof v === 'number' && TIME_KEY.test(k) && Number.isInteger(v) && v >= EPOCH_MS_MIN && v < EPOCH_MS_MAX) return `${k}=${formatTime(new Date(v).toISOString())}`;
      return `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`;
    })
    .join(' ');
}

export function showCommand(): Command {
  return new Command('show')
    .description('show a task: its fields, result, attempts and state transitions')
    .argument('<id>', 'task id, or a unique prefix of 6+ characters (any case)')
    .option('--json', 'print {"task", "attempts", "events"} as JSON')
    .action(async (rawId: string, flags: { json?: boolean }, cmd: Command) => {
      const client = connect(cmd);
      const detail = await client.getTask(await resolveTaskId(client, rawId));
      if (flags.json) printJson(detail);
      else process.stdout.write(formatTaskDetail(detail, Date.now(), stdoutColour()));
    });
}

export function logsCommand(): Command {
  return new Command('logs')
    .description("write a task's combined stdout and stderr to stdout; with -f, exit with the task's status (as submit --wait)")
    .argument('<id>', 'task id, or a unique prefix of 6+ characters (any case)')
    .option('-f, --follow', 'keep streaming new output until the task ends')
    .option('--attempt <n>', 'only this attempt\'s output')
    .action(async (rawId: string, flags: { follow?: boolean; attempt?: string }, cmd: Command) => {
      const attempt = flags.attempt !== undefined ? parseIntFlag('--attempt', flags.attempt, 1, 1_000_000) : undefined;
      const client = connect(cmd);
      const id = await resolveTaskId(client, rawId);
      if (attempt !== undefined) {
        // An attempt that does not exist and never will (the task ended, or no -f to wait for it) is an
        // error, not an empty log.
        const { task } = await client.getTask(id);
        const ended = ['succeeded', 'failed', 'cancelled', 'skipped'].includes(task.state);
        if (attempt > task.attempts && (!flags.follow || ended)) {
          throw new Error(`task ${id} has ${task.attempts} attempt${task.attempts === 1 ? '' : 's'}: no attempt ${attempt}${ended ? '' : ' yet (-f waits for it)'}`);
        }
      }
      // Loaded here: ls and show do not need them at start-up.
      const [{ streamLogs, terminalFilter }, { waitOutcome }] = await Promise.all([import('../follow-logs.js'), import('../task-exit.js')]);
      // To a terminal, without the escape sequences and controls of the task's output; piped, byte for byte.
      const filter = terminalFilter(process.stdout);
      const final = await streamLogs(client, id, { follow: !!flags.follow, out: process.stdout, ...(filter ? { filter } : {}), ...(attempt !== undefined ? { attempt } : {}) });
      // Following, the task's end is the command's: its exit status and, unless it succeeded, one summary line (task-exit.ts).
      if (final) {
        const { exitCode, message } = waitOutcome(final);
        if (message) process.stderr.write(`drover: ${safeText(message)}\n`);
        process.exitCode = exitCode;
      }
    });
}

export function cancelCommand(): Command {
  return new Command('cancel')
    .description('cancel a task that has not ended; prints its new state')
    .argument('<id>', 'task id, or a unique prefix of 6+ characters (any case)')
    .option('--json', 'print the task as JSON')
    .action(async (rawId: string, flags: { json?: boolean }, cmd: Command) => {
      const client = connect(cmd);
      const task = await client.cancel(await resolveTaskId(client, rawId));
      if (flags.json) printJson(task);
      else process.stdout.write(`${safeText(task.state)}\n`);
    });
}

export function retryCommand(): Command {
  return new Command('retry')
    .description('run a failed or cancelled task again with a fresh retry budget; prints its new state')
    .argument('<id>', 'task id, or a unique prefix of 6+ characters (any case)')
    .option('--json', 'print the task as JSON')
    .action(async (rawId: string, flags: { json?: boolean }, cmd: Command) => {
      const client = connect(cmd);
      const task = await client.retry(await resolveTaskId(client, rawId));
      if (flags.json) printJson(task);
      else process.stdout.write(`${safeText(task.state)}\n`);
    });
}
