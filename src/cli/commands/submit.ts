/**
 * `drover submit [options] -- CMD [ARGS...]` (or `--script FILE|-`, or
 * `--from-file FILE|-` for many tasks at once: commands/submit-file.ts).
 *
 * Every flag is validated here, before any request, with a message naming
 * the flag (exit 2). Prints the new task's id, or the task as JSON.
 *
 * Every submit carries an Idempotency-Key: `--idempotency-key K`, or a random
 * one made for this invocation. The client retries the submit with the same
 * key after a 503 or a request that got no answer, so a retry never makes a
 * second task; and re-running the command with the same `--idempotency-key`
 * prints the task the first run made. With
 * `--wait` it streams the log to stdout until the task ends and exits with the
 * task's status (see waitOutcome); with `--wait --json` stdout carries only the
 * final task JSON.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Command } from '../commander.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../../client/client.js';
import { RETRY_LIMITS } from '../../core/retry-policy.js';
import { MAX_SCRIPT_CHARS } from '../../core/task.js';
import type { SubmitTaskRequest } from '../../client/types.js';
import { connect } from '../context.js';
import { printJson, safeText } from '../output.js';
import { collect, parseDurationFlag, parseIntFlag, parseKeyValues, parseNumberFlag } from '../parse.js';
import { UsageError } from '../usage-error.js';
import { parseAtFlag } from '../parse-at.js';
import { waitForTask } from '../wait-task.js';
import { MAX_BASE_KEY, submitFile } from './submit-file.js';

export const MISSING_COMMAND = 'missing command: drover submit -- CMD [ARGS...]';

export interface SubmitFlags {
  name?: string;
  retries?: string;
  retryBase?: string;
  retryFactor?: string;
  retryCap?: string;
  timeout?: string;
  priority?: string;
  env?: string[];
  label?: string[];
  require?: string[];
  idempotencyKey?: string;
  script?: string;
  interpreter?: string;
  wait?: boolean;
  json?: boolean;
  fromFile?: string;
  cwd?: string;
  at?: string;
  in?: string;
}

/** How far ahead --at/--in may schedule (the server's limit, task-input.ts MAX_SCHEDULE_AHEAD_MS). */
const MAX_AHEAD_MS = 366 * 24 * 3600 * 1000;

/** The flags that describe one task: with --from-file every task's fields come from the file instead. */
const PER_TASK_FLAGS: ReadonlyArray<[keyof SubmitFlags, string]> = [
  ['name', '--name'], ['retries', '--retries'], ['retryBase', '--retry-base'], ['retryFactor', '--retry-factor'], ['retryCap', '--retry-cap'],
  ['timeout', '--timeout'], ['priority', '--priority'], ['env', '--env'], ['label', '--label'], ['require', '--require'],
  ['script', '--script'], ['interpreter', '--interpreter'], ['wait', '--wait'], ['cwd', '--cwd'], ['at', '--at'], ['in', '--in'],
];

/**
 * --from-file's usage rules: no command, no per-task flag, a base key short
 * enough for its batch keys. Returns the base idempotency key.
 */
export function checkFromFileUsage(argv: readonly string[], f: SubmitFlags, random: () => string = randomUUID): string {
  if (argv.length) throw new UsageError(`--from-file and a command are exclusive: got --from-file ${safeText(f.fromFile ?? '')} and command "${safeText(argv[0]!)}"`);
  for (const [k, flag] of PER_TASK_FLAGS) {
    if (f[k] !== undefined) throw new UsageError(`--from-file and ${flag} are exclusive: each line of the file gives its task's fields (e.g. {"command": "echo", "args": ["hi"], "retry": {"maxRetries": 1}})`);
  }
  const base = idempotencyKeyOf(f, random);
  if (base.length > MAX_BASE_KEY) throw new UsageError(`invalid --idempotency-key: with --from-file at most ${MAX_BASE_KEY} characters (a batch number is appended)`);
  return base;
}

function readTaskFile(file: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new UsageError(`invalid --from-file "${safeText(file)}": cannot read it (${code})`);
  }
}

/**
 * The request body for the flags and operands, or a UsageError. Pure except
 * that `--script FILE` is read through `readScript` (stdin for "-").
 */
export function buildSubmitRequest(
  argv: readonly string[],
  f: SubmitFlags,
  readScript: (file: string) => string = readScriptFile,
  here: string = process.cwd(),
  now: Date = new Date(),
): SubmitTaskRequest {
  const req: SubmitTaskRequest = {};
  if (f.name !== undefined) {
    if (f.name.length < 1 || f.name.length > 200) throw new UsageError(`invalid --name "${f.name}": expected 1..200 characters`);
    req.name = f.name;
  }

  const retry: NonNullable<SubmitTaskRequest['retry']> = {};
  if (f.retries !== undefined) retry.maxRetries = parseIntFlag('--retries', f.retries, 0, RETRY_LIMITS.maxRetries);
  if (f.retryBase !== undefined) retry.baseDelay = parseDurationFlag('--retry-base', f.retryBase, RETRY_LIMITS.maxDelayMs);
  if (f.retryFactor !== undefined) retry.factor = parseNumberFlag('--retry-factor', f.retryFactor, 1, RETRY_LIMITS.maxFactor);
  if (f.retryCap !== undefined) retry.maxDelay = parseDurationFlag('--retry-cap', f.retryCap, RETRY_LIMITS.maxDelayMs);
  if (Object.keys(retry).length) req.retry = retry;

  if (f.timeout !== undefined) {
    const ms = parseDurationFlag('--timeout', f.timeout);
    if (ms <= 0) throw new UsageError(`invalid --timeout "${f.timeout}": must be greater than 0`);
    req.timeout = ms;
  }
  if (f.priority !== undefined) req.priority = parseIntFlag('--priority', f.priority, -1000, 1000);
  const env = parseKeyValues('--env', f.env);
  if (Object.keys(env).length) req.env = env;
  const labels = parseKeyValues('--label', f.label);
  if (Object.keys(labels).length) req.labels = labels;
  const requires = parseKeyValues('--require', f.require);
  if (Object.keys(requires).length) req.requires = requires;

  if (f.cwd !== undefined) {
    if (f.cwd === '' || f.cwd.includes('\0')) throw new UsageError(`invalid --cwd "${safeText(f.cwd)}": expected a directory`);
    // Resolved here, against the directory the CLI runs in; the worker must have the same path.
    req.cwd = path.resolve(here, f.cwd);
    if (req.cwd.length > 4096) throw new UsageError('invalid --cwd: the absolute path is longer than 4096 characters');
  }
  if (f.at !== undefined && f.in !== undefined) throw new UsageError('--at and --in are exclusive: give one time to run the task');
  if (f.at !== undefined) req.runAt = parseAtFlag(f.at, now);
  if (f.in !== undefined) req.delay = parseDurationFlag('--in', f.in, MAX_AHEAD_MS);

  if (f.script !== undefined) {
    if (argv.length) throw new UsageError(`--script and a command are exclusive: got --script ${f.script} and command "${argv[0]}"`);
    req.script = readScript(f.script);
    // The server's rules, said here with the flag and file named (not as a body field).
    if (req.script === '') throw new UsageError(`invalid --script "${safeText(f.script)}": the script is empty`);
    if (req.script.length > MAX_SCRIPT_CHARS && [...req.script].length > MAX_SCRIPT_CHARS) {
      throw new UsageError(`invalid --script "${safeText(f.script)}": longer than ${MAX_SCRIPT_CHARS} characters; put a longer program in a file on the workers (or an artifact) and run it as a command`);
    }
    // A task from a file is named after it (a script read from stdin keeps the server's default, "script").
    if (req.name === undefined && f.script !== '-') req.name = path.basename(f.script).slice(0, 200) || 'script';
    if (f.interpreter !== undefined) {
      const interp = f.interpreter.trim().split(/\s+/).filter(Boolean);
      if (!interp.length) throw new UsageError('invalid --interpreter "": expected a program, e.g. "python3 -u"');
      req.interpreter = interp;
    }
  } else {
    if (f.interpreter !== undefined) throw new UsageError('--interpreter needs --script FILE|-');
    const [command, ...args] = argv;
    if (command === undefined || command === '') throw new UsageError(MISSING_COMMAND);
    req.command = command;
    if (args.length) req.args = args;
  }
  return req;
}

/**
 * The warning for a command given as a relative path (`./backup.sh`, `../bin/x`)
 * without --cwd: it resolves in the task's fresh work directory on the worker,
 * not in the directory the CLI runs in. Null when there is nothing to say.
 */
export function relativeCommandWarning(argv: readonly string[], f: Pick<SubmitFlags, 'cwd' | 'script'>, here: string = process.cwd()): string | null {
  const command = argv[0];
  if (f.cwd !== undefined || f.script !== undefined || command === undefined) return null;
  if (!command.startsWith('./') && !command.startsWith('../')) return null;
  return (
    `warning: ${safeText(command)} will resolve in the task's work directory on the worker, not in ${safeText(here)} here; ` +
    `use an absolute path (${safeText(path.resolve(here, command))}) or --cwd DIR (e.g. --cwd .)`
  );
}

/** The key to send: the flag's, checked against the server's rule, or a fresh random one. */
export function idempotencyKeyOf(f: Pick<SubmitFlags, 'idempotencyKey'>, random: () => string = randomUUID): string {
  if (f.idempotencyKey === undefined) return random();
  if (!IDEMPOTENCY_KEY_PATTERN.test(f.idempotencyKey)) {
    throw new UsageError(`invalid --idempotency-key "${safeText(f.idempotencyKey)}": expected 1..255 visible ASCII characters (no spaces)`);
  }
  return f.idempotencyKey;
}

function readScriptFile(file: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new UsageError(`invalid --script "${file}": cannot read it (${code})`);
  }
}

export function submitCommand(): Command {
  return new Command('submit')
    .description('submit a task: a command (after --) or an inline script')
    .usage('[options] -- CMD [ARGS...]')
    .argument('[command...]', 'the executable and its arguments, run without a shell')
    .option('--name <name>', 'task name (default: the command, the --script file\'s name, or "script")')
    .option('--retries <n>', 'retries after a failed attempt, integer 0..100 (default 3)')
    .option('--retry-base <duration>', 'delay before the first retry, e.g. 500ms, 30s, 5m; a bare number is seconds (default 1s)')
    .option('--retry-factor <x>', 'delay multiplier per retry, 1..10 (default 2)')
    .option('--retry-cap <duration>', 'longest delay between retries; a bare number is seconds (default 1h)')
    .option('--timeout <duration>', 'wall-clock limit per attempt, e.g. 30s, 5m, 1h30m; a bare number is seconds')
    .option('--priority <n>', 'integer -1000..1000, higher runs first (default 0)')
    .option('--env <K=V>', 'environment variable for the task (repeatable)', collect)
    .option('--label <K=V>', 'label (repeatable)', collect)
    .option('--require <K=V>', 'run only on a worker with this label (repeatable; all must match)', collect)
    .option('--idempotency-key <key>', 'submitting again with the same key returns the first task instead of a new one (default: a random key per submit)')
    .option('--script <file>', 'run this script file instead of a command ("-" reads stdin)')
    .option('--interpreter <argv>', 'with --script: the program that runs it, e.g. "python3 -u" (default: the script\'s own #! line if it starts with one, else sh)')
    .option('--cwd <dir>', 'run the task in this directory on the worker (resolved to an absolute path here; default: a fresh work directory)')
    .option('--at <time>', 'run later: HH:MM (the next such local time), a local YYYY-MM-DDTHH:MM, or ISO 8601 with a zone (2026-12-01T18:00:00Z); a past time runs now')
    .option('--in <duration>', 'run later, after this long: e.g. 90s, 5m, 1h30m; a bare number is seconds (at most 366 days)')
    .option('--wait', 'stream the log, then exit with the task\'s exit status')
    .option('--from-file <file>', 'submit every task of a JSON Lines file ("-" reads stdin): one POST /v1/tasks object per line, sent in batches of 1000; prints the ids')
    .option('--json', 'print the task as JSON (with --from-file: a JSON array of the tasks)')
    .action(async (argv: string[], flags: SubmitFlags, cmd: Command) => {
      if (flags.fromFile !== undefined) {
        const baseKey = checkFromFileUsage(argv, flags);
        const name = flags.fromFile === '-' ? 'stdin' : flags.fromFile;
        // Loaded here only: the schema compiler is not on every start-up's path.
        const { parseTaskFile } = await import('../task-file.js');
        const file = parseTaskFile(readTaskFile(flags.fromFile), name);
        await submitFile(connect(cmd), file, name, baseKey, flags.json === true);
        return;
      }
      const req = buildSubmitRequest(argv, flags);
      const warning = relativeCommandWarning(argv, flags);
      if (warning) process.stderr.write(`drover: ${warning}\n`);
      const idempotencyKey = idempotencyKeyOf(flags);
      const client = connect(cmd);
      const task = await client.submit(req, { idempotencyKey });
      if (!flags.wait) {
        if (flags.json) printJson(task);
        else process.stdout.write(`${task.id}\n`);
        return;
      }
      await waitForTask(client, task, { json: flags.json === true });
    });
}
