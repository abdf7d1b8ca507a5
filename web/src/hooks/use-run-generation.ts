/**
 * A key for the task's current run, as the page saw it (run-generation.ts):
 * the log's reader starts again when it changes, and only then (a tail ends
 * by itself when the task ends).
 */
import { useRef } from 'react';
import { TERMINAL_STATES, type TaskState } from '../api/types';
import { firstRunSeen, nextRunSeen, type RunSeen } from './run-generation';

export function useRunGeneration(state: TaskState, attempts: number): string {
  const ref = useRef<RunSeen | null>(null);
  const terminal = TERMINAL_STATES.has(state);
  ref.current = ref.current === null ? firstRunSeen(terminal, attempts) : nextRunSeen(ref.current, terminal, attempts);
  return String(ref.current.n);
}
