/**
 * commander, loaded through `require`. Its package's ESM entry (esm.mjs) is a
 * wrapper around the CommonJS build, and importing it makes Node run the
 * CommonJS export lexer over it and link one more module: measured 11 ms of
 * a `drover ls` start (node 20, 2 shared cores) against about 6 ms through
 * require. Same module, same classes: `import ... from 'commander'` elsewhere
 * gets these very objects from the CommonJS cache.
 */
import { createRequire } from 'node:module';
import type * as CommanderModule from 'commander';

const commander = createRequire(import.meta.url)('commander') as typeof CommanderModule;

export const Command = commander.Command;
export type Command = CommanderModule.Command;
export const CommanderError = commander.CommanderError;
export type CommanderError = CommanderModule.CommanderError;
