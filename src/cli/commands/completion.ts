/** `drover completion bash|zsh|fish`: prints a completion script made from the whole command tree (completion-script.ts). */
import { Command } from '../commander.js';
import { completionScript, completionTree, SHELLS, type Shell } from '../completion-script.js';
import { UsageError } from '../usage-error.js';

export function completionCommand(): Command {
  return new Command('completion')
    .description('print a shell completion script: eval "$(drover completion bash)", or see the script\'s first line for zsh and fish')
    .argument('<shell>', SHELLS.join(', '))
    .action(async (shell: string) => {
      if (!(SHELLS as readonly string[]).includes(shell)) throw new UsageError(`invalid shell "${shell}": expected one of ${SHELLS.join(', ')}`);
      // Every command module is loaded here, and only here: the script lists them all.
      const { buildProgram } = await import('../program.js');
      process.stdout.write(completionScript(shell as Shell, completionTree(await buildProgram())));
    });
}
