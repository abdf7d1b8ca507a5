/**
 * `drover dev --verbose`: one line on the terminal per task that ends
 * (succeeded, failed, cancelled), read from the in-process store's change feed:
 *   `12:00:01 task 01JD... (nightly-backup) succeeded in 1.2s on dev-w1`
 *
 * The feed is tailed from its head at start (earlier ends are not repeated),
 * on each `task` signal of the store (SQLite emits them in this process after
 * each commit), one read at a time. A task printed as ended is printed again
 * only after it left that state (a retry that ends again).
 */
import type { Store } from '../store/store.js';
import type { TaskSummary } from '../store/task-views.js';
import { clockTime } from './human-log.js';
import { safeText } from './output.js';

const ENDED = new Set(['succeeded', 'failed', 'cancelled', 'skipped']);
/** Ended tasks remembered (oldest forgotten first): a long session's memory stays bounded. */
const PRINTED_CAP = 10_000;

/** 35ms, 1.2s, 2m05s, 1h02m. */
export function shortDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** The line for an ended task (no newline). Pure: `now` stands in when the task has no end time. */
export function formatTaskEnd(t: Pick<TaskSummary, 'id' | 'name' | 'state' | 'durationMs' | 'workerId' | 'endedAt' | 'exitCode' | 'signal' | 'error'>, now: number): string {
  const took = t.durationMs !== null ? ` in ${shortDuration(t.durationMs)}` : '';
  const where = t.workerId ? ` on ${t.workerId}` : '';
  let why = '';
  if (t.state === 'failed') why = t.error ? `: ${t.error}` : t.signal ? `: killed by ${t.signal}` : t.exitCode !== null ? `: exit code ${t.exitCode}` : '';
  return safeText(`${clockTime(t.endedAt ?? now)} task ${t.id} (${t.name}) ${t.state}${took}${where}${why}`.replace(/[\r\n\t]+/g, ' '));
}

export interface TaskEndTail {
  stop(): void;
}

/** Starts tailing; lines go to `write`. Errors of a read are reported once per read through `warn` and the tail goes on. */
export async function tailTaskEnds(store: Store, write: (line: string) => void, warn: (message: string) => void): Promise<TaskEndTail> {
  let cursor = await store.feedHead();
  const printed = new Map<string, string>();
  let reading = false;
  let again = false;
  let stopped = false;

  const read = async (): Promise<void> => {
    for (;;) {
      const page = await store.readChanges(cursor, 500);
      cursor = page.cursor;
      const ended: string[] = [];
      for (const c of page.changes) {
        if (c.topic !== 'task' || c.state === null) continue;
        if (!ENDED.has(c.state)) printed.delete(c.ref);
        else if (printed.get(c.ref) !== c.state) {
          printed.set(c.ref, c.state);
          if (printed.size > PRINTED_CAP) printed.delete(printed.keys().next().value!);
          ended.push(c.ref);
        }
      }
      if (ended.length) {
        const byId = new Map((await store.getTaskSummaries(ended)).map((t) => [t.id, t]));
        for (const id of ended) {
          const t = byId.get(id);
          if (t && !stopped) write(formatTaskEnd(t, Date.now()) + '\n');
        }
      }
      if (page.changes.length < 500) return;
    }
  };
  const pump = () => {
    if (stopped) return;
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    read()
      .catch((err: unknown) => warn(`--verbose: could not read the task feed: ${(err as Error).message}`))
      .finally(() => {
        reading = false;
        if (again) {
          again = false;
          pump();
        }
      });
  };
  const off = store.onSignal((s) => {
    if (s.kind === 'task') pump();
  });
  return {
    stop() {
      stopped = true;
      off();
    },
  };
}
