/**
 * Entry point of the `drover` executable (bin/drover.js requires it, bundled
 * into dist/cli/main.cjs by rolldown.config.js): loading it runs the CLI with
 * the process arguments. No top-level await: the bundle is CommonJS
 * (rolldown.config.js says why), so the work is one async function.
 */
async function main(args: string[]): Promise<void> {
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
}

// A rejection here is a bug of ours (runCli turns every failure into one stderr line and a
// status): left unhandled, so Node prints it and exits 1, as it did for a top-level await.
void main(process.argv.slice(2));

export {};
