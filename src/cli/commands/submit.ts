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
import { Command } from 'commander';
import { IDEMPOTENCY_KEY_PATTERN } from '../../client/client.js';
import { RETRY_LIMITS } from '../../core/retry-policy.js';
import type { SubmitTaskRequest, Task } from '../../client/types.js';
import { connect } from '../context.js';
import { streamLogs, terminalFilter, waitOutcome } from '../follow-logs.js';
import { printJson, safeText } from '../output.js';
import { collect, parseDurationFlag, parseIntFlag, parseKeyValues, parseNumberFlag } from '../parse.js';
import { UsageError } from '../usage-error.js';
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
}

/** The flags that describe one task: with --from-file every task's fields come from the file instead. */
const PER_TASK_FLAGS: ReadonlyArray<[keyof SubmitFlags, string]> = [
  ['name', '--name'], ['retries', '--retries'], ['retryBase', '--retry-base'], ['retryFactor', '--retry-factor'], ['retryCap', '--retry-cap'],
  ['timeout', '--timeout'], ['priority', '--priority'], ['env', '--env'], ['label', '--label'], ['require', '--require'],
  ['script', '--script'], ['interpreter', '--interpreter'], ['wait', '--wait'],
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
export function buildSubmitRequest(argv: readonly string[], f: SubmitFlags, readScript: (file: string) => string = readScriptFile): SubmitTaskRequest {
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

  if (f.script !== undefined) {
    if (argv.length) throw new UsageError(`--script and a command are exclusive: got --script ${f.script} and command "${argv[0]}"`);
    req.script = readScript(f.script);
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
    .option('--name <name>', 'task name (default: the command, or "script")')
    .option('--retries <n>', 'retries after a failed attempt, integer 0..100 (default 3)')
    .option('--retry-base <duration>', 'delay before the first retry (default 1s)')
    .option('--retry-factor <x>', 'delay multiplier per retry, 1..10 (default 2)')
    .option('--retry-cap <duration>', 'longest delay between retries (default 1h)')
    .option('--timeout <duration>', 'wall-clock limit per attempt, e.g. 30s, 5m')
    .option('--priority <n>', 'integer -1000..1000, higher runs first (default 0)')
    .option('--env <K=V>', 'environment variable for the task (repeatable)', collect)
    .option('--label <K=V>', 'label (repeatable)', collect)
    .option('--require <K=V>', 'run only on a worker with this label (repeatable; all must match)', collect)
    .option('--idempotency-key <key>', 'submitting again with the same key returns the first task instead of a new one (default: a random key per submit)')
    .option('--script <file>', 'run this script file instead of a command ("-" reads stdin)')
    .option('--interpreter <argv>', 'with --script: the program that runs it, e.g. "python3 -u" (default sh)')
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
      const idempotencyKey = idempotencyKeyOf(flags);
      const client = connect(cmd);
      const task = await client.submit(req, { idempotencyKey });
      if (!flags.wait) {
        if (flags.json) printJson(task);
        else process.stdout.write(`${task.id}\n`);
        return;
      }
      process.once('SIGINT', () => {
        process.stderr.write(`drover: stopped waiting; task ${task.id} keeps running (drover cancel ${task.id} stops it)\n`);
        process.exit(130);
      });
      const out = flags.json ? null : process.stdout;
      const filter = out ? terminalFilter(process.stdout) : undefined;
      const final: Task = (await streamLogs(client, task.id, { follow: true, out, ...(filter ? { filter } : {}) })) ?? task;
      if (flags.json) printJson(final);
      const { exitCode, message } = waitOutcome(final);
      if (message) process.stderr.write(`drover: ${safeText(message)}\n`);
      process.exitCode = exitCode;
    });
}
