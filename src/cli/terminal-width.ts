/** The width tables fit (`drover ls`, `drover dag ...`): $COLUMNS, else the terminal's, else DEFAULT_WIDTH. */
export const DEFAULT_WIDTH = 80;

export function terminalWidth(): number {
  const env = Number(process.env.COLUMNS);
  if (Number.isInteger(env) && env > 0) return env;
  return process.stdout.isTTY && process.stdout.columns ? process.stdout.columns : DEFAULT_WIDTH;
}
