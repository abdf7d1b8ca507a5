/**
 * The pure step behind useRunGeneration (use-run-generation.ts), one render to
 * the next: counts the runs of a task that the page saw start again after it
 * had ended (a retry by hand), so the log's reader starts again at each count.
 *
 * A new run is seen in either of two ways:
 *  - the task goes from an end state back to work (failed → waiting);
 *  - it stays ended but its attempt count changed (failed after 1 attempt →
 *    failed after 2). The page can miss the states in between: the retry's
 *    answer and the live stream's later change can land in one render (React
 *    and TanStack Query batch them). Without this case the log kept showing
 *    the old run only, and the tail had ended with it.
 *
 * No imports: the unit test (test/web/run-generation.test.ts) runs it in Node.
 */
export interface RunSeen {
  terminal: boolean;
  attempts: number;
  /** Runs started again since the page opened. */
  n: number;
}

export function firstRunSeen(terminal: boolean, attempts: number): RunSeen {
  return { terminal, attempts, n: 0 };
}

export function nextRunSeen(prev: RunSeen, terminal: boolean, attempts: number): RunSeen {
  const again = prev.terminal && (!terminal || attempts !== prev.attempts);
  return { terminal, attempts, n: again ? prev.n + 1 : prev.n };
}
