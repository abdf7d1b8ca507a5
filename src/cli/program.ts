/**
 * The `drover` command tree and its error contract: whatever goes wrong, the
 * user sees exactly one line on stderr, `drover: <message>`, and the exit
 * status is 2 for bad input (commander's usage errors, our flag checks, the
 * server's 400) and 1 for anything else. Help and --version exit 0.
 *
 * `runCli` never calls process.exit on success, so output piped to another
 * program is flushed; long-running commands (server, worker, dev) resolve once
 * started and keep the process alive with their own handles.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../worker/package-root.js';
import { Command, CommanderError } from './commander.js';
import { colourFlags } from './colour.js';
import { EXIT_USAGE, UsageError } from './usage-error.js';

/**
 * The command modules, in the order `drover --help` lists their commands, each
 * loaded only when one of its commands runs (see commandsToLoad). Measured
 * (15 runs, user+sys CPU, 2 shared cores): `drover --version` loading all of
 * them (44 modules) 80-100 ms, `node` with only commander 61 ms, `node -e 0`
 * 40-44 ms; loading none (11 modules) 60-68 ms. `--help` loads them all
 * (80 ms either way); `ls` only its own (`ls --bogus` 80 → 70 ms).
 */
const MODULES: readonly { names: readonly string[]; load: () => Promise<Command[]> }[] = [
  { names: ['submit'], load: async () => [(await import('./commands/submit.js')).submitCommand()] },
  { names: ['rerun'], load: async () => [(await import('./commands/rerun.js')).rerunCommand()] },
  {
    names: ['ls', 'show', 'logs', 'cancel', 'retry'],
    load: async () => {
      const m = await import('./commands/tasks.js');
      return [m.lsCommand(), m.showCommand(), m.logsCommand(), m.cancelCommand(), m.retryCommand()];
    },
  },
  { names: ['cron'], load: async () => [(await import('./commands/cron.js')).cronCommand()] },
  { names: ['dag'], load: async () => [(await import('./commands/dag.js')).dagCommand()] },
  { names: ['token'], load: async () => [(await import('./commands/tokens.js')).tokenCommand()] },
  { names: ['workers'], load: async () => [(await import('./commands/workers.js')).workersCommand()] },
  { names: ['server'], load: async () => [(await import('./commands/server.js')).serverCommand()] },
  { names: ['worker'], load: async () => [(await import('./commands/worker.js')).workerCommand()] },
  { names: ['dev'], load: async () => [(await import('./commands/dev.js')).devCommand()] },
  {
    names: ['login', 'logout'],
    load: async () => {
      const m = await import('./commands/login.js');
      return [m.loginCommand(), m.logoutCommand()];
    },
  },
  { names: ['completion'], load: async () => [(await import('./commands/completion.js')).completionCommand()] },
];

/** The root options that take a value (commander takes the next argument as it, whatever it looks like). */
const ROOT_VALUE_OPTIONS = new Set(['--url', '--token']);
/** The root options without a value. */
const ROOT_FLAGS = new Set(['--no-color']);

/**
 * Which command modules a run with these arguments needs, read the way
 * commander reads the root's arguments: none when a root -V/--version comes
 * before the command (commander prints the version as soon as it meets the
 * option); only the named command's module when the first operand names one
 * (directly or as `help NAME`); every module otherwise (the root help, an
 * unknown command with its suggestion, an unknown root option, `--`), so
 * that whatever commander prints there is exactly what the whole tree gives.
 */
export function commandsToLoad(argv: readonly string[]): 'none' | 'all' | readonly string[] {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-V' || a === '--version') return 'none';
    if (ROOT_VALUE_OPTIONS.has(a)) {
      i++;
      continue;
    }
    if ([...ROOT_VALUE_OPTIONS].some((o) => a.startsWith(`${o}=`))) continue;
    if (ROOT_FLAGS.has(a)) continue;
    if (a.startsWith('-')) return 'all';
    const name = a === 'help' ? argv[i + 1] : a;
    const mod = MODULES.find((m) => name !== undefined && m.names.includes(name));
    return mod ? mod.names : 'all';
  }
  return 'all';
}

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(join(packageRoot(import.meta.url), 'package.json'), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** The command tree for these arguments: the root with the commands commandsToLoad names (default: all of them). */
export async function buildProgram(argv?: readonly string[]): Promise<Command> {
  const load = argv === undefined ? 'all' : commandsToLoad(argv);
  const program = new Command('drover')
    .description('Drover: a self-hosted task scheduler. Run commands and scripts on a fleet of worker agents, with retries and live logs.')
    .version(version(), '-V, --version')
    .option('--url <url>', 'Drover server (default: env DROVER_URL, .drover/credentials.json, then what drover login stored, else http://127.0.0.1:7070)')
    .option('--token <token>', 'API token (default: env DROVER_TOKEN, .drover/credentials.json, then what drover login stored)')
    .option('--no-color', 'no colour (also: env NO_COLOR set to anything, or output that is not a terminal)')
    .hook('preAction', (root) => {
      colourFlags.noColor = root.opts<{ color?: boolean }>().color === false;
    });
  if (load !== 'none') {
    const wanted = MODULES.filter((m) => load === 'all' || m.names === load);
    for (const cmds of await Promise.all(wanted.map((m) => m.load()))) for (const c of cmds) program.addCommand(c);
  }
  configureTree(program);
  return program;
}

/** Same error handling on every (sub)command: commander throws instead of printing and exiting. */
function configureTree(cmd: Command): void {
  cmd.exitOverride();
  cmd.configureOutput({
    writeOut: (s) => process.stdout.write(s),
    writeErr: (s) => process.stderr.write(s),
    // Printed by runCli as the single `drover: ...` line instead.
    outputError: () => {},
  });
  cmd.showSuggestionAfterError(true);
  for (const sub of cmd.commands) configureTree(sub);
}

/** The one-line message for a commander usage error. */
async function commanderMessage(err: CommanderError, argv: readonly string[]): Promise<string> {
  let msg = err.message.replace(/^error:\s*/i, '').replace(/\s*\n\s*/g, ' ').trim();
  if (err.code === 'commander.unknownOption' && argv.includes('submit') && !argv.includes('--')) {
    const { MISSING_COMMAND } = await import('./commands/submit.js');
    msg += ` (put the command after --: ${MISSING_COMMAND.replace(/^missing command: /, '')})`;
  }
  return msg;
}

/**
 * Commander gives the root's -V/--version precedence wherever it appears on
 * the line, so `drover dag show etl --version 2` would print Drover's version.
 * After the command `dag`, `--version N` is `dag show`'s option: it is passed
 * on as `--version=N`, a spelling the root's flag (which takes no value)
 * leaves to the subcommand. Anything else is returned unchanged.
 */
export function subcommandVersionArgs(argv: readonly string[]): string[] {
  const out = [...argv];
  let i = 0;
  for (; i < out.length; i++) {
    const a = out[i]!;
    if (ROOT_VALUE_OPTIONS.has(a)) i++;
    else if (!a.startsWith('-')) break;
  }
  if (out[i] !== 'dag') return out;
  for (let j = i + 1; j < out.length - 1; j++) {
    if (out[j] === '--') break;
    if (out[j] === '--version' && !out[j + 1]!.startsWith('-')) out.splice(j, 2, `--version=${out[j + 1]}`);
  }
  return out;
}

/** Parses and runs; resolves with the exit status (the caller sets process.exitCode). */
export async function runCli(rawArgv: readonly string[]): Promise<number> {
  const argv = subcommandVersionArgs(rawArgv);
  const program = await buildProgram(argv);
  if (argv.length === 0) {
    program.outputHelp();
    return EXIT_USAGE;
  }
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      if (err.code === 'commander.help') return EXIT_USAGE; // a command group without its subcommand: help went to stderr
      if (err.code === 'commander.executeSubCommandAsync') return err.exitCode;
      const { printError } = await import('./output.js');
      return printError(new UsageError(await commanderMessage(err, argv)));
    }
    // Loaded here, not up front: `drover --version` and `--help` need neither (nor the API client they import).
    const [{ printError }, { session }] = await Promise.all([import('./output.js'), import('./context.js')]);
    return printError(err, session.connection);
  }
}
