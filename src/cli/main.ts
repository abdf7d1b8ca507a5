/**
 * Entry point of the `drover` executable (bin/drover.js imports it, bundled
 * into dist/cli/main.js by rolldown.config.js): importing it runs the CLI with
 * the process arguments.
 */
const args = process.argv.slice(2);
// Before the CLI's modules load: `drover server` and `drover dev` may start
// again in this process with MALLOC_ARENA_MAX set (malloc-arenas.ts, whose
// limitMallocArenasEarly checks the command again); the other commands do not
// load that module (start-up time is a target for `drover ls`).
if (args[0] === 'server' || args[0] === 'dev') (await import('./malloc-arenas.js')).limitMallocArenasEarly(args);

const { runCli } = await import('./program.js');
const { exitWithParent } = await import('./signals.js');

exitWithParent();

// `drover logs ID | head` closes the pipe early: that is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

const code = await runCli(args);
if (code !== 0) {
  // Failed before or while starting: do not linger on handles a half-started command left open.
  process.exit(code);
}
