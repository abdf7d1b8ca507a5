/**
 * The logger the worker writes to: the subset of pino the agent uses, so the
 * CLI can pass a pino instance and tests can pass nothing (silence).
 */
export interface Logger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

/** The default: the agent is quiet unless its host gives it a logger. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};
