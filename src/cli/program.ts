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
import { Command, CommanderError } from 'commander';
import { devCommand } from './commands/dev.js';
import { serverCommand } from './commands/server.js';
import { MISSING_COMMAND, submitCommand } from './commands/submit.js';
import { cancelCommand, logsCommand, lsCommand, retryCommand, showCommand } from './commands/tasks.js';
import { tokenCommand } from './commands/tokens.js';
import { workerCommand } from './commands/worker.js';
import { workersCommand } from './commands/workers.js';
import { session } from './context.js';
import { printError } from './output.js';
import { EXIT_USAGE, UsageError } from './usage-error.js';

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

export function buildProgram(): Command {
  const program = new Command('drover')
    .description('Drover: a self-hosted task scheduler. Run commands and scripts on a fleet of worker agents, with retries and live logs.')
    .version(version(), '-V, --version')
    .option('--url <url>', 'Drover server (default: env DROVER_URL, .drover/credentials.json, http://127.0.0.1:7070)')
    .option('--token <token>', 'API token (default: env DROVER_TOKEN, .drover/credentials.json)')
    .addCommand(submitCommand())
    .addCommand(lsCommand())
    .addCommand(showCommand())
    .addCommand(logsCommand())
    .addCommand(cancelCommand())
    .addCommand(retryCommand())
    .addCommand(tokenCommand())
    .addCommand(workersCommand())
    .addCommand(serverCommand())
    .addCommand(workerCommand())
    .addCommand(devCommand());
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
function commanderMessage(err: CommanderError, argv: readonly string[]): string {
  let msg = err.message.replace(/^error:\s*/i, '').replace(/\s*\n\s*/g, ' ').trim();
  if (err.code === 'commander.unknownOption' && argv.includes('submit') && !argv.includes('--')) {
    msg += ` (put the command after --: ${MISSING_COMMAND.replace(/^missing command: /, '')})`;
  }
  return msg;
}

/** Parses and runs; resolves with the exit status (the caller sets process.exitCode). */
export async function runCli(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
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
      return printError(new UsageError(commanderMessage(err, argv)));
    }
    return printError(err, session.connection);
  }
}
