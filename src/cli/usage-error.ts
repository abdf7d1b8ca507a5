/**
 * Bad input detected by the CLI itself, before any request is made. The
 * message is complete and names the flag; the CLI prints it as
 * `drover: <message>` and exits with status 2.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Exit statuses: 2 for bad input (ours or the server's 400), 1 for everything else. */
export const EXIT_USAGE = 2;
export const EXIT_FAILURE = 1;
