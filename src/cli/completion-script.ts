/**
 * Shell completion scripts generated from the commander tree, so every
 * command and flag the CLI has is completed and none it lacks: the tree is
 * walked once (`completionTree`), then written out for bash, zsh or fish.
 * Commands complete after their parent; flags of the command being typed
 * (and the root's) complete everywhere. Pure: no I/O.
 */
import type { Command } from 'commander';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

export interface CompletionNode {
  /** Names from the root, e.g. ['token', 'create']; [] for the root. */
  path: string[];
  description: string;
  subcommands: CompletionNode[];
  flags: { long: string | null; short: string | null; description: string }[];
}

export function completionTree(cmd: Command, path: string[] = []): CompletionNode {
  const flags = cmd.options.filter((o) => !(o as { hidden?: boolean }).hidden).map((o) => ({ long: o.long ?? null, short: o.short ?? null, description: o.description }));
  flags.push({ long: '--help', short: '-h', description: 'display help' });
  return {
    path,
    description: cmd.description(),
    subcommands: cmd.commands.filter((c) => !(c as { _hidden?: boolean })._hidden).map((c) => completionTree(c, [...path, c.name()])),
    flags,
  };
}

function walk(n: CompletionNode): CompletionNode[] {
  return [n, ...n.subcommands.flatMap(walk)];
}

const names = (n: CompletionNode) => n.subcommands.map((s) => s.path.at(-1)!);
const flagWords = (n: CompletionNode) => n.flags.flatMap((f) => [f.long, f.short].filter((x): x is string => !!x));

/** Single-quoted for a POSIX shell. */
function sq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The shared shell function: `_drover_words PATH` prints the candidates, `_drover_subs PATH` the subcommands. */
function wordsFunction(root: CompletionNode, fn: string): string {
  const nodes = walk(root);
  const rootFlags = flagWords(root);
  const cases = nodes.map((n) => {
    const words = fn === 'subs' ? names(n) : [...names(n), ...new Set([...flagWords(n), ...rootFlags])];
    return `    ${sq(n.path.join(' '))}) echo ${sq(words.join(' '))} ;;`;
  });
  return `_drover_${fn}() {\n  case "$1" in\n${cases.join('\n')}\n  esac\n}\n`;
}

export function completionScript(shell: Shell, root: CompletionNode): string {
  switch (shell) {
    case 'bash':
      return `# drover completion for bash: eval "$(drover completion bash)" (or save it in ~/.local/share/bash-completion/completions/drover)
${wordsFunction(root, 'subs')}${wordsFunction(root, 'words')}_drover() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" cmdpath="" w i
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    case " $(_drover_subs "$cmdpath") " in *" $w "*) cmdpath="\${cmdpath:+$cmdpath }$w" ;; esac
  done
  COMPREPLY=($(compgen -W "$(_drover_words "$cmdpath")" -- "$cur"))
}
complete -o default -F _drover drover
`;
    case 'zsh':
      return `#compdef drover
# drover completion for zsh: eval "$(drover completion zsh)" (or save it as _drover in a directory of $fpath)
${wordsFunction(root, 'subs')}${wordsFunction(root, 'words')}_drover() {
  local cmdpath="" w i
  for ((i = 2; i < CURRENT; i++)); do
    w="\${words[i]}"
    if [[ " $(_drover_subs "$cmdpath") " == *" $w "* ]]; then cmdpath="\${cmdpath:+$cmdpath }$w"; fi
  done
  compadd -- \${=$(_drover_words "$cmdpath")}
  _files
}
compdef _drover drover
`;
    case 'fish': {
      const lines = ['# drover completion for fish: drover completion fish > ~/.config/fish/completions/drover.fish', 'complete -c drover -f'];
      for (const n of walk(root)) {
        // Where this node's words apply: right after its own path, before any of its subcommands.
        const after = n.path.map((p) => `__fish_seen_subcommand_from ${p}`);
        const notYet = names(n).length ? [`not __fish_seen_subcommand_from ${names(n).join(' ')}`] : [];
        const cond = n.path.length ? [...after, ...notYet].join('; and ') : '__fish_use_subcommand';
        for (const s of n.subcommands) lines.push(`complete -c drover -n ${sq(cond)} -a ${sq(s.path.at(-1)!)} -d ${sq(s.description)}`);
        const flagCond = n.path.length ? after.join('; and ') : '';
        for (const f of n.flags) {
          const parts = ['complete -c drover'];
          if (flagCond) parts.push(`-n ${sq(flagCond)}`);
          if (f.long) parts.push(`-l ${f.long.replace(/^--/, '')}`);
          if (f.short) parts.push(`-s ${f.short.replace(/^-/, '')}`);
          parts.push(`-d ${sq(f.description)}`);
          lines.push(parts.join(' '));
        }
      }
      return lines.join('\n') + '\n';
    }
  }
}
