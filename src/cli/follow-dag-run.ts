/**
 * Follows a DAG run until it ends (`drover dag run --wait`, `dag retry
 * --wait`), handing each new view of it to `onDetail`.
 *
 * The run as GET /v1/dag-runs/:id answers it is the truth: its state, its
 * steps' states, times and outputs (the run's own row is not in the change
 * feed). What says WHEN to read it again is the live stream (GET /v1/stream):
 * every change of one of the run's step tasks arrives there within
 * milliseconds of its commit, so the CLI prints a step's start or end as it
 * happens, and reads nothing while nothing happens. The step that ends a run
 * ends it in the same transaction, so the read after that step's change sees
 * the run ended.
 *
 * Why not polling alone: a poll either lags (a 1 s interval for a run of
 * 20 ms steps) or loads the server (a detail read per interval per waiting
 * CLI, growing with the DAG's size). Why not the stream alone: it may be
 * refused (at most 16 streams per token: 429) or cut by a proxy, and it
 * carries task summaries, not the run. So: the stream wakes the reader; a
 * slow poll (FALLBACK_POLL_MS) covers a stream that could not be opened or
 * went quiet; bursts of changes are read once (COALESCE_MS), and one read
 * at a time.
 *
 * Order: the stream's `hello` (it is subscribed from then on) also wakes the
 * reader, so a change between the first read and the subscription is not
 * missed.
 */
import type { DroverClient, EventStream } from '../client/client.js';
import type { DagRunDetail } from '../client/dag-types.js';

export const FALLBACK_POLL_MS = 2000;
export const COALESCE_MS = 25;

export async function followDagRun(client: DroverClient, runId: string, onDetail: (d: DagRunDetail) => void): Promise<DagRunDetail> {
  let stopped = false;
  let dirty = false;
  let wake: (() => void) | null = null;
  const nudge = () => {
    dirty = true;
    wake?.();
  };
  /** Resolves after `ms`, or at the next nudge (or stop); never keeps the process alive by itself. */
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(done, ms);
      t.unref();
      function done() {
        clearTimeout(t);
        wake = null;
        resolve();
      }
      wake = done;
    });

  let stream: EventStream | null = null;
  const watch = (async () => {
    let cursor: string | undefined;
    while (!stopped) {
      try {
        stream = await client.stream(cursor !== undefined ? { cursor } : {});
        if (stopped) {
          await stream.close();
          break;
        }
        for await (const ev of stream) {
          if (ev.type === 'changes' ? ev.tasks.some((t) => t.dagRunId === runId) : true) nudge();
          cursor = stream.lastEventId ?? cursor;
        }
      } catch {
        // Refused (429), unreachable, cut: the fallback poll goes on; try again later.
      }
      if (stopped) break;
      await new Promise<void>((r) => setTimeout(r, FALLBACK_POLL_MS).unref());
    }
  })();

  try {
    for (;;) {
      dirty = false;
      const d = await client.getDagRun(runId);
      onDetail(d);
      if (d.run.state !== 'running') return d;
      if (!dirty) await pause(FALLBACK_POLL_MS);
      // Let a burst of changes (a fan-out's steps starting together) land before the next read.
      await new Promise<void>((r) => setTimeout(r, COALESCE_MS));
    }
  } finally {
    stopped = true;
    wake = null;
    await (stream as EventStream | null)?.close();
    void watch.catch(() => {});
  }
}
