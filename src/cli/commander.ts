/**
 * commander, the one place the CLI's modules get it from. The executable runs
 * a bundle (rolldown.config.js) with commander inside it, so its CommonJS
 * runs without Node's CommonJS loader (7 files); this static import is what
 * lets the bundler take it in. Unbundled (dist/src/, as the tests load it)
 * this goes through commander's ESM wrapper: slower to start, same classes.
 */
export { Command, CommanderError } from 'commander';
