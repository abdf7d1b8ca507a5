/**
 * Counts how often a task went from a terminal state back to running work
 * (a retry) while the page is open: the log tail starts again each time, and
 * only then (the tail ends by itself when the task ends).
 */
import { useRef } from 'react';
import { TERMINAL_STATES, type TaskState } from '../api/types';

export function useRunGeneration(state: TaskState): string {
  const ref = useRef({ terminal: TERMINAL_STATES.has(state), n: 0 });
  const terminal = TERMINAL_STATES.has(state);
  if (ref.current.terminal && !terminal) ref.current.n++;
  ref.current.terminal = terminal;
  return String(ref.current.n);
}
