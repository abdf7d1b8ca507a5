/**
 * `drover cron add|ls|show|pause|resume|rm|run|next` (issue 11). Every flag
 * is validated before any request (cron-input.ts; exit 2, the flag named).
 * `cron next` computes fire times here with the server's own core
 * (core/cron), so it needs no server and creates nothing.
 */
import { Command } from '../commander.js';
import { nextFireTimes } from '../../core/cron/next-fire.js';
import type { Schedule } from '../../client/schedule-types.js';
import { connect } from '../context.js';
import { printJson, safeText } from '../output.js';
import { collect } from '../parse.js';
import { UsageError } from '../usage-error.js';
import { buildCreateScheduleRequest, parseCountFlag, parseFromFlag, parseScheduleFlags, type CronAddFlags } from './cron-input.js';
import { parseScheduleName } from '../schedule-name.js';
import { formatFireTimes, formatScheduleDetail, formatScheduleTable } from './cron-output.js';

const SUBCOMMANDS = 'add, ls, show, pause, resume, rm, run or next';

interface OwnerFlags {
  owner?: string;
  json?: boolean;
}

function ownerOf(f: OwnerFlags): string | undefined {
  if (f.owner !== undefined && !f.owner.trim()) throw new UsageError('invalid --owner "": expected a user name');
  return f.owner;
}

export function cronCommand(): Command {
  const cron = new Command('cron')
    .description('cron schedules: run a task, or a DAG, at every fire time of a cron expression')
    .usage('add|ls|show|pause|resume|rm|run|next [options]')
    .argument('[subcommand]')
    .action((sub: string | undefined) => {
      if (sub === undefined) throw new UsageError(`missing subcommand: drover cron ${SUBCOMMANDS.replace(/, | or /g, '|')}`);
      throw new UsageError(`unknown subcommand "cron ${safeText(sub)}": expected ${SUBCOMMANDS}`);
    });

  cron
    .command('add')
    .description('create a schedule; each fire time runs the command (after --) or --script as a task, or with --dag starts a run of that DAG')
    .usage('NAME --schedule EXPR [options] -- CMD [ARGS...]  |  NAME --schedule EXPR --dag DAG [--param K=V]...')
    .argument('<name>', 'schedule name: 1..100 of A-Z a-z 0-9 . _ - (unique per user)')
    .argument('[command...]', 'the executable and its arguments, run without a shell')
    .requiredOption('--schedule <expr>', 'cron expression: 5 fields, or 6 with leading seconds; @hourly, @daily, @weekly, @monthly')
    .option('--tz <zone>', 'IANA time zone the expression is read in (default UTC)')
    .option('--overlap <policy>', 'when the previous run is still going: allow (default), forbid (skip the slot) or replace (cancel it)')
    .option('--catchup <policy>', 'slots missed while no server ran or while paused: none, latest (default, run the newest once) or all')
    .option('--max-catchup <n>', 'with --catchup all: run at most this many missed slots, 1..1000 (default 10)')
    .option('--dag <name>', 'each fire time starts a run of this DAG (its newest version then) instead of running a command')
    .option('--param <K=V>', 'with --dag: run parameter, seen by every step as DROVER_PARAM_<K> (repeatable)', collect)
    .option('--task-name <name>', 'name of each run\'s task (default: the schedule name)')
    .option('--retries <n>', 'retries after a failed attempt, integer 0..100 (default 3)')
    .option('--retry-base <duration>', 'delay before the first retry (default 1s)')
    .option('--retry-factor <x>', 'delay multiplier per retry, 1..10 (default 2)')
    .option('--retry-cap <duration>', 'longest delay between retries (default 1h)')
    .option('--timeout <duration>', 'wall-clock limit per attempt, e.g. 30s, 5m; a bare number is seconds')
    .option('--priority <n>', 'integer -1000..1000, higher runs first (default 0)')
    .option('--env <K=V>', 'environment variable for each run (repeatable)', collect)
    .option('--label <K=V>', 'label of each run (repeatable)', collect)
    .option('--require <K=V>', 'run only on a worker with this label (repeatable)', collect)
    .option('--script <file>', 'run this script file instead of a command (read now; "-" reads stdin)')
    .option('--interpreter <argv>', 'with --script: the program that runs it, e.g. "python3 -u"')
    .option('--cwd <dir>', 'run in this directory on the worker (resolved to an absolute path here)')
    .option('--json', 'print the schedule as JSON')
    .action(async (name: string, argv: string[], flags: CronAddFlags, cmd: Command) => {
      const req = buildCreateScheduleRequest(name, argv, flags);
      const s = await connect(cmd).createSchedule(req);
      if (flags.json) return printJson(s);
      process.stdout.write(`${safeText(s.name)}\n`);
      process.stderr.write(`created schedule ${safeText(s.name)} (${safeText(s.schedule)}, ${safeText(s.tz)}); next run ${s.nextFireAt ?? 'never'}\n`);
    });

  cron
    .command('ls')
    .description('list schedules')
    .option('--owner <user>', 'only this user\'s schedules (admins)')
    .option('--json', 'print {"schedules": [...]} as JSON')
    .action(async (flags: OwnerFlags, cmd: Command) => {
      const owner = ownerOf(flags);
      const list: Schedule[] = [];
      for await (const s of connect(cmd).allSchedules(owner !== undefined ? { owner } : {})) list.push(s);
      if (flags.json) return printJson({ schedules: list });
      if (!list.length) return void process.stderr.write('no schedules\n');
      process.stdout.write(formatScheduleTable(list));
    });

  cron
    .command('show')
    .description('show a schedule: its settings, next fire times and recent runs (state and lateness)')
    .argument('<name>')
    .option('--owner <user>', 'that user\'s schedule of this name (admins)')
    .option('--json', 'print {"schedule", "next", "runs"} as JSON')
    .action(async (name: string, flags: OwnerFlags, cmd: Command) => {
      const n = parseScheduleName(name);
      const d = await connect(cmd).getSchedule(n, ownerOf(flags));
      if (flags.json) return printJson(d);
      process.stdout.write(formatScheduleDetail(d));
    });

  const act = (verb: 'pause' | 'resume' | 'rm', description: string, done: string) =>
    cron
      .command(verb)
      .description(description)
      .argument('<name>')
      .option('--owner <user>', 'that user\'s schedule of this name (admins)')
      .option('--json', 'print the schedule as JSON')
      .action(async (name: string, flags: OwnerFlags, cmd: Command) => {
        const n = parseScheduleName(name);
        const owner = ownerOf(flags);
        const client = connect(cmd);
        const s = verb === 'pause' ? await client.pauseSchedule(n, owner) : verb === 'resume' ? await client.resumeSchedule(n, owner) : await client.deleteSchedule(n, owner);
        if (flags.json) return printJson(s);
        process.stdout.write(`${done} ${safeText(s.name)}${verb === 'resume' ? `; next run ${s.nextFireAt ?? 'never'}` : ''}\n`);
      });
  act('pause', 'pause a schedule: nothing fires until it is resumed', 'paused');
  act('resume', 'resume a schedule; slots missed while paused follow its --catchup policy', 'resumed');
  act('rm', 'delete a schedule (its past tasks stay)', 'removed');

  cron
    .command('run')
    .description('run a schedule now, out of schedule; prints the task id (a DAG schedule: the DAG run id)')
    .argument('<name>')
    .option('--owner <user>', 'that user\'s schedule of this name (admins)')
    .option('--json', 'print the task (a DAG schedule: the DAG run) as JSON')
    .action(async (name: string, flags: OwnerFlags, cmd: Command) => {
      const n = parseScheduleName(name);
      const made = await connect(cmd).runSchedule(n, ownerOf(flags));
      const item = made.task ?? made.run!;
      if (flags.json) return printJson(item);
      process.stdout.write(`${item.id}\n`);
      if (made.run) process.stderr.write(`started DAG run ${made.run.id} of ${safeText(made.run.dag)}; follow it with: drover dag status ${made.run.id}\n`);
    });

  cron
    .command('next')
    .description('print the next fire times of an expression (computed here: no server, nothing created)')
    .argument('<expr>', 'cron expression (quote it)')
    .option('--tz <zone>', 'IANA time zone (default UTC)')
    .option('--from <time>', 'times after this ISO 8601 time with a zone (default now)')
    .option('--count <n>', `how many, 1..1000 (default 5)`)
    .option('--json', 'print {"next": [...]} as JSON (ISO times, UTC)')
    .action((expr: string, flags: { tz?: string; from?: string; count?: string; json?: boolean }) => {
      const schedule = parseScheduleFlags(expr, flags.tz, 'expression');
      const from = parseFromFlag(flags.from, Date.now());
      const times = nextFireTimes(schedule, from, parseCountFlag(flags.count));
      if (flags.json) return printJson({ schedule: schedule.expr, tz: schedule.tz, next: times.map((t) => new Date(t).toISOString()) });
      process.stdout.write(formatFireTimes(times, schedule.tz));
    });

  return cron;
}
