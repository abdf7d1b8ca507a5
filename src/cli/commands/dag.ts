/**
 * `drover dag apply|ls|show|run|runs|status|cancel|retry` (issue 12). Every
 * flag and operand is validated before any request (dag-input.ts; exit 2,
 * the flag named). Run ids take a unique prefix of 6+ characters like task
 * ids (resolve-dag-run-id.ts). The DAG file reader (and the yaml package) is
 * loaded only by `dag apply`.
 *
 * Outputs:
 *   apply    `applied DAG etl version 2 (5 steps)` | `DAG etl unchanged (version 2)`
 *   run      the run id; with --wait a line per step change, then
 *            `run ID succeeded in 4.2s: 5 succeeded` (exit 0 only if it succeeded)
 *   ls, show, runs, status   tables fitted to the terminal (dag-output.ts)
 *   cancel   `run ID cancelled`;  retry  `run ID running again`
 * --json prints the API's answer instead.
 */
import { Command } from '../commander.js';
import type { DagRequest, DagRunDetail, DagRunListItem, DagSummary } from '../../client/dag-types.js';
import type { DroverClient } from '../../client/client.js';
import { ApiError } from '../../client/errors.js';
import { stdoutColour } from '../colour.js';
import { connect } from '../context.js';
import { printJson, safeText } from '../output.js';
import { collect } from '../parse.js';
import { parseRunIdArg, resolveDagRunId } from '../resolve-dag-run-id.js';
import { terminalWidth } from '../terminal-width.js';
import { UsageError } from '../usage-error.js';
import { parseDagName, parseLimitFlag, parseOwnerFlag, parseParams, parseVersionFlag } from './dag-input.js';
import { formatDagDetail, formatDagTable, formatRunStatus, formatRunTable } from './dag-output.js';
import { failureLine, progressLines, seenOf, summaryLine, type Seen } from './dag-watch.js';

const SUBCOMMANDS = 'apply, ls, show, run, runs, status, cancel or retry';
const RUN_ID_HELP = 'run id, or a unique prefix of 6+ characters (any case)';
/** Recent runs `dag show` lists. */
const SHOW_RUNS = 10;

interface TableFlags {
  json?: boolean;
  wide?: boolean;
}

const tableOptions = (f: TableFlags) => ({ width: f.wide ? Number.MAX_SAFE_INTEGER : terminalWidth(), colour: stdoutColour(), now: Date.now() });

/**
 * Follows the run to its end, printing its step changes (not with --json),
 * then its summary; the exit status is 0 only if it succeeded. Ctrl-C stops
 * the waiting, not the run.
 */
async function waitForRun(client: DroverClient, runId: string, seen: Seen, json: boolean): Promise<void> {
  process.once('SIGINT', () => {
    process.stderr.write(`drover: stopped waiting; run ${runId} keeps running (drover dag cancel ${runId} stops it)\n`);
    process.exit(130);
  });
  const colour = stdoutColour();
  const { followDagRun } = await import('../follow-dag-run.js');
  const final: DagRunDetail = await followDagRun(client, runId, (d) => {
    if (json) return;
    for (const line of progressLines(d, seen, Date.now(), colour)) process.stdout.write(line + '\n');
  });
  if (json) printJson(final);
  else process.stdout.write(summaryLine(final, Date.now()) + '\n');
  if (final.run.state !== 'succeeded') process.stderr.write(`drover: ${safeText(failureLine(final))}\n`);
  process.exitCode = final.run.state === 'succeeded' ? 0 : 1;
}

export function dagCommand(): Command {
  const dag = new Command('dag')
    .description('DAG workflows: steps (tasks) with dependencies, run in topological order with parallel branches')
    .usage('apply|ls|show|run|runs|status|cancel|retry [options]')
    .argument('[subcommand]')
    .action((sub: string | undefined) => {
      if (sub === undefined) throw new UsageError(`missing subcommand: drover dag ${SUBCOMMANDS.replace(/, | or /g, '|')}`);
      throw new UsageError(`unknown subcommand "dag ${safeText(sub)}": expected ${SUBCOMMANDS}`);
    });

  dag
    .command('apply')
    .description('store a DAG file (YAML or JSON) as the next version of its DAG, or leave it unchanged when it is the same')
    .argument('<file>', 'the DAG file ("-" reads stdin): name, description, params, steps (docs/api.md, "DAGs")')
    .option('--json', 'print {"dag", "created"} as JSON')
    .action(async (path: string, flags: { json?: boolean }, cmd: Command) => {
      // Loaded here: only apply needs the YAML parser.
      const [{ readDagFile }, { checkDagFile }, { describeServerError }] = await Promise.all([import('./dag-file.js'), import('./dag-file-check.js'), import('./dag-file-errors.js')]);
      const file = readDagFile(path);
      checkDagFile(file);
      let res;
      try {
        res = await connect(cmd).applyDag(file.body as DagRequest);
      } catch (e) {
        // The server's reason, with the field as the file spells it and its line; nothing was stored.
        if (e instanceof ApiError && (e.status === 400 || e.status === 413)) throw new UsageError(describeServerError(file, e.field, e.reason ?? e.message));
        throw e;
      }
      if (flags.json) return printJson(res);
      const d = res.dag;
      process.stdout.write(
        res.created
          ? `applied DAG ${safeText(d.name)} version ${d.version} (${d.steps.length} step${d.steps.length === 1 ? '' : 's'})\n`
          : `DAG ${safeText(d.name)} unchanged (version ${d.version})\n`,
      );
    });

  dag
    .command('ls')
    .description('list DAGs (their newest versions)')
    .option('--owner <user>', 'only this user\'s DAGs (admins)')
    .option('--wide', 'cut nothing to fit the terminal')
    .option('--json', 'print {"dags": [...]} as JSON')
    .action(async (flags: TableFlags & { owner?: string }, cmd: Command) => {
      const owner = parseOwnerFlag(flags.owner);
      const client = connect(cmd);
      const dags: DagSummary[] = [];
      for (let cursor: string | undefined; ; ) {
        const page = await client.listDags({ ...(owner !== undefined ? { owner } : {}), ...(cursor !== undefined ? { cursor } : {}), limit: 500 });
        dags.push(...page.dags);
        if (!page.nextCursor) break;
        cursor = page.nextCursor;
      }
      if (flags.json) return printJson({ dags });
      if (!dags.length) return void process.stderr.write('no DAGs (drover dag apply FILE stores one)\n');
      process.stdout.write(formatDagTable(dags, tableOptions(flags)));
    });

  dag
    .command('show')
    .description('show a DAG: its steps (dependencies, condition, what they run) and its recent runs')
    .argument('<name>')
    .option('--version <n>', 'that version (default: the newest)')
    .option('--owner <user>', 'that user\'s DAG of this name (admins)')
    .option('--wide', 'cut nothing to fit the terminal')
    .option('--json', 'print {"dag", "runs"} as JSON')
    .action(async (rawName: string, flags: TableFlags & { version?: string; owner?: string }, cmd: Command) => {
      const name = parseDagName(rawName);
      const version = parseVersionFlag(flags.version);
      const owner = parseOwnerFlag(flags.owner);
      const client = connect(cmd);
      const [d, newest, runs] = await Promise.all([
        client.getDag(name, { ...(owner !== undefined ? { owner } : {}), ...(version !== undefined ? { version } : {}) }),
        version !== undefined ? client.getDag(name, owner !== undefined ? { owner } : {}).then((x) => x.version) : Promise.resolve(null),
        client.listDagRuns({ dag: name, ...(owner !== undefined ? { owner } : {}), limit: SHOW_RUNS }),
      ]);
      if (flags.json) return printJson({ dag: d, runs: runs.runs });
      process.stdout.write(formatDagDetail(d, runs.runs, { ...tableOptions(flags), newest }));
    });

  dag
    .command('run')
    .description('start a run of a DAG\'s newest version; prints the run id (with --wait, its steps as they change)')
    .argument('<name>')
    .option('--param <K=V>', 'run parameter, seen by every step as DROVER_PARAM_<K> (repeatable)', collect)
    .option('--wait', 'follow the run until it ends, printing each step\'s start and end; exit 0 only if it succeeded')
    .option('--owner <user>', 'run that user\'s DAG of this name (admins; the run is theirs)')
    .option('--json', 'print the run as JSON (with --wait: the ended run with its steps)')
    .action(async (rawName: string, flags: { param?: string[]; wait?: boolean; owner?: string; json?: boolean }, cmd: Command) => {
      const name = parseDagName(rawName);
      const params = parseParams(flags.param);
      const owner = parseOwnerFlag(flags.owner);
      const client = connect(cmd);
      const run = await client.runDag(name, params, owner);
      if (!flags.wait) {
        if (flags.json) printJson(run);
        else process.stdout.write(`${run.id}\n`);
        return;
      }
      if (!flags.json) process.stdout.write(`${run.id}\n`);
      await waitForRun(client, run.id, new Map(), !!flags.json);
    });

  dag
    .command('runs')
    .description('list a DAG\'s runs, newest first: state, start, duration, steps succeeded/total')
    .argument('<name>')
    .option('--limit <n>', 'how many, 1..500 (default 20)')
    .option('--all', 'every run (follows the pages)')
    .option('--owner <user>', 'that user\'s DAG of this name (admins)')
    .option('--wide', 'full run ids; cut nothing to fit the terminal')
    .option('--json', 'print {"runs": [...], "nextCursor"} as JSON')
    .action(async (rawName: string, flags: TableFlags & { limit?: string; all?: boolean; owner?: string }, cmd: Command) => {
      const name = parseDagName(rawName);
      const limit = parseLimitFlag(flags.limit, 20);
      const owner = parseOwnerFlag(flags.owner);
      const client = connect(cmd);
      const runs: DagRunListItem[] = [];
      let nextCursor: string | null = null;
      for (let cursor: string | undefined; ; ) {
        const page = await client.listDagRuns({ dag: name, ...(owner !== undefined ? { owner } : {}), ...(cursor !== undefined ? { cursor } : {}), limit: flags.all ? 500 : limit });
        runs.push(...page.runs);
        nextCursor = page.nextCursor;
        if (!flags.all || !nextCursor) break;
        cursor = nextCursor;
      }
      if (flags.json) return printJson({ runs, nextCursor });
      if (!runs.length) return void process.stderr.write(`no runs of DAG ${safeText(name)} (drover dag run ${safeText(name)} starts one)\n`);
      process.stdout.write(formatRunTable(runs, tableOptions(flags)));
      if (nextCursor) process.stderr.write('(more runs: use --all or a larger --limit)\n');
    });

  dag
    .command('status')
    .description('show a run: each step\'s state (and skip reason), task, attempts, start, duration and outputs')
    .argument('<run>', RUN_ID_HELP)
    .option('--critical-path', 'also the chain of steps that decided the run\'s duration, with each one\'s share')
    .option('--wide', 'full task ids; cut nothing to fit the terminal')
    .option('--json', 'print the run with its steps, counts and critical path as JSON')
    .action(async (rawId: string, flags: TableFlags & { criticalPath?: boolean }, cmd: Command) => {
      parseRunIdArg(rawId);
      const client = connect(cmd);
      const d = await client.getDagRun(await resolveDagRunId(client, rawId));
      if (flags.json) return printJson(d);
      process.stdout.write(formatRunStatus(d, { ...tableOptions(flags), criticalPath: !!flags.criticalPath }));
    });

  dag
    .command('cancel')
    .description('cancel a running run: its running steps are stopped, its pending ones cancelled')
    .argument('<run>', RUN_ID_HELP)
    .option('--json', 'print the run as JSON')
    .action(async (rawId: string, flags: { json?: boolean }, cmd: Command) => {
      parseRunIdArg(rawId);
      const client = connect(cmd);
      const run = await client.cancelDagRun(await resolveDagRunId(client, rawId));
      if (flags.json) return printJson(run);
      process.stdout.write(`run ${run.id} ${run.state}\n`);
    });

  dag
    .command('retry')
    .description('run an ended run\'s failed and cancelled steps again (and those skipped because of them); succeeded steps are kept')
    .argument('<run>', RUN_ID_HELP)
    .option('--wait', 'follow the run until it ends again; exit 0 only if it succeeded')
    .option('--json', 'print the run as JSON (with --wait: the ended run with its steps)')
    .action(async (rawId: string, flags: { wait?: boolean; json?: boolean }, cmd: Command) => {
      parseRunIdArg(rawId);
      const client = connect(cmd);
      const id = await resolveDagRunId(client, rawId);
      // With --wait, the steps as they were before: those the retry keeps are not news.
      const before = flags.wait ? seenOf(await client.getDagRun(id)) : new Map();
      const run = await client.retryDagRun(id);
      if (!flags.wait) {
        if (flags.json) printJson(run);
        else process.stdout.write(`run ${run.id} running again\n`);
        return;
      }
      if (!flags.json) process.stdout.write(`run ${run.id} running again\n`);
      await waitForRun(client, run.id, before, !!flags.json);
    });

  return dag;
}
