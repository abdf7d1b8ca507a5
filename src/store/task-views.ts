/**
 * Read models for the dashboard and the list API: summary rows (no script,
 * no env, no args; never `SELECT *`), counts by state without a scan of the
 * tasks, per-minute activity, running attempts per worker. All indexed: the
 * query-plan tests (test/store/query-plans.test.ts) check each one.
 */
import type { SkipReason } from '../core/dag/release.js';
import type { TaskState } from '../core/task-state.js';
import type { AttemptOutcome } from '../core/task.js';
import type { TaskFilter } from './tasks.js';

export interface TaskSummary {
  id: string;
  owner: string;
  name: string;
  kind: string;
  state: TaskState;
  priority: number;
  attempts: number;
  retriesUsed: number;
  /** The current (latest) attempt's worker, timing and end, or null before the first claim. */
  workerId: string | null;
  startedAt: number | null;
  endedAt: number | null;
  durationMs: number | null;
  exitCode: number | null;
  signal: string | null;
  /** The final result's error (or the current attempt's), e.g. "timed out after 30 s". */
  error: string | null;
  /**
   * How the task ended (its result's outcome: `timed_out`, `start_failed`, `lost`...) once
   * terminal; before that, how its current attempt ended (null while it runs or before a claim).
   */
  outcome: AttemptOutcome | null;
  runAfter: number | null;
  /** The schedule whose run this is and its slot (core/task.ts Task.scheduleId, scheduledAt). */
  scheduleId: string | null;
  scheduledAt: number | null;
  /** The DAG run and step this task is (core/task.ts Task.dagRunId, dagStep, skipReason). */
  dagRunId: string | null;
  dagStep: string | null;
  skipReason: SkipReason | null;
  createdAt: number;
  updatedAt: number;
}

export interface TaskSummaryPage {
  tasks: TaskSummary[];
  nextCursor: string | null;
}

/** Per minute (epoch ms floored to the minute), summed over owners unless filtered. */
export interface MinuteStat {
  minute: number;
  /** Attempts started in that minute. */
  started: number;
  /** Tasks that reached the state in that minute. */
  succeeded: number;
  failed: number;
  cancelled: number;
  /** Submit → first attempt's start, for first attempts started in that minute. */
  latencyCount: number;
  latencySumMs: number;
  latencyMaxMs: number;
}

export interface RunningAttemptView {
  attemptId: number;
  taskId: string;
  taskName: string;
  owner: string;
  workerId: string;
  startedAt: number;
}

export interface TaskViewStore {
  /** TaskFilter as listTasks (plus idPrefix), newest first, keyset by id. */
  listTaskSummaries(filter: TaskFilter): Promise<TaskSummaryPage>;
  /** Summaries of these ids (any order; unknown ids left out). At most 1,000 ids. */
  getTaskSummaries(ids: readonly string[]): Promise<TaskSummary[]>;
  /** Every state with its count (0 included), for one owner or all; from counters, not a scan. */
  countTasksByState(owner?: string): Promise<Record<TaskState, number>>;
  /** Minutes from the one holding `since` up to (not including) `until`, ascending, only minutes with activity. */
  minuteStats(since: number, until: number, owner?: string): Promise<MinuteStat[]>;
  /** Every running attempt (optionally of one worker), oldest first. */
  runningAttempts(workerId?: string): Promise<RunningAttemptView[]>;
  /** Deletes per-minute rows older than `before`; returns how many. */
  pruneMinuteStats(before: number): Promise<number>;
  /**
   * Replaces the several rows of one counter key by their sum (the counts
   * and the minutes from `since` on): PostgreSQL's writers append delta rows
   * instead of locking one row per key (migration 5), and readers sum
   * whatever is there, so folding changes no answer, only how many rows a
   * read sums. Safe to run concurrently from several servers. SQLite keeps
   * one row per key (one writer, no lock to contend for): nothing to fold, 0.
   * Returns the number of rows folded away.
   */
  foldCounters(since: number): Promise<number>;
}
