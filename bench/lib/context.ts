/** What every section gets: where to report, and the sizes of this run (full or --quick). */
import type { Report } from './report.js';

export interface Sizes {
  /** Tasks waiting before the drain's worker starts. */
  drainN: number;
  /** Slots of the drain's one worker (and the peers' concurrency). */
  drainSlots: number;
  /** Sequential single submits. */
  submitN: number;
  /**
   * Untimed operations each side runs before the sequential-submit and the
   * latency spans, on the same server, queue and connection the span then
   * uses. Those spans measure fresh processes (Drover's server and agent are
   * started for them), and V8 compiles a process's hot code only as it runs
   * it: measured 2026-12-03 (/tmp probe, 400 sequential POST /v1/tasks a
   * round from a fresh client, SQLite), the first round of a fresh server
   * cost 2.2-3.0 ms a submit, the tenth 0.9-1.1 ms; graphile-worker's
   * addJob 1.15 ms falling to 0.85 ms. The span then compares running
   * systems, not start-ups; the warm-up's own rate is printed beside it.
   */
  warmUp: number;
  /** Tasks submitted in batches of 1,000. */
  batchN: number;
  /** Latency samples on the 20 ms grid (after latencyWarm warm-up submits on the same grid). */
  latencyN: number;
  latencyWarm: number;
  /** `/bin/true` runs, and the parallelism P of Drover's agent, xargs -P and the Node loop. */
  spawnN: number;
  spawnP: number;
  /** Tasks through the server before its memory is read. */
  memN: number;
  /** Seconds from the end of that drain to the server's second (idle) reading; 0: one reading only (--quick: the wait was a third of its run). */
  serverSettleS: number;
  /** Seconds between the agent's two memory readings (memory.ts); 0: one reading only (--quick, whose two minutes it would not fit). */
  agentLaterS: number;
  /** Tasks per scale-out drain, and the server counts to try. */
  scaleN: number;
  scaleServers: number[];
  /** DAG section: measured runs of the 100-step chain (each with its two baselines) and of the 1,000-step fan-out (each with its batch). */
  dagRuns: number;
  /** DAG section: timed POST /v1/dags of the 1,000-step fan-out (each a new DAG). */
  dagApplies: number;
  /** Schedules `* * * * *` of the cron section, the minute boundaries it observes, and the runs of its per-second schedule. */
  cronSchedules: number;
  cronMinutes: number;
  cronSecondRuns: number;
}

export const FULL: Sizes = { drainN: 20_000, drainSlots: 10, submitN: 2_000, warmUp: 3_000, batchN: 20_000, latencyN: 200, latencyWarm: 20, spawnN: 2_000, spawnP: 8, memN: 100_000, serverSettleS: 30, agentLaterS: 15, scaleN: 20_000, scaleServers: [1, 2, 3], dagRuns: 3, dagApplies: 5, cronSchedules: 10_000, cronMinutes: 3, cronSecondRuns: 60 };
export const QUICK: Sizes = { drainN: 2_000, drainSlots: 10, submitN: 300, warmUp: 300, batchN: 2_000, latencyN: 50, latencyWarm: 10, spawnN: 300, spawnP: 8, memN: 5_000, serverSettleS: 0, agentLaterS: 0, scaleN: 2_000, scaleServers: [1, 2], dagRuns: 1, dagApplies: 2, cronSchedules: 10_000, cronMinutes: 1, cronSecondRuns: 20 };

export interface Ctx {
  report: Report;
  sizes: Sizes;
}
export type Section = (ctx: Ctx) => Promise<void>;
