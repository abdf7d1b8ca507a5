/**
 * Copies a task's log to a stream, optionally following it until the task is
 * terminal.
 *
 * Following survives a dropped connection or a server restart: the log is
 * append-only, so on reconnect the bytes already written are skipped and the
 * output is neither repeated nor lost. It gives up after `giveUpMs` without any
 * answer from the server. HTTP 4xx answers (404, 401, ...) end it at once.
 */
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { DroverClient } from '../client/client.js';
import { ApiError, ConnectionError } from '../client/errors.js';
import type { HttpResponse } from '../client/http-transport.js';
import type { Task } from '../client/types.js';
import { controlStripper, type ByteFilter } from './output.js';

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'skipped']);

export interface StreamLogsOptions {
  follow: boolean;
  attempt?: number;
  /** Null discards the bytes (used by `submit --wait --json`, which only waits). */
  out: Writable | null;
  /**
   * Applied to the log's bytes on their way to `out` (after the resume
   * offset is counted, which is in raw bytes). See terminalFilter.
   */
  filter?: ByteFilter;
  /** How long following keeps retrying without reaching the server. */
  giveUpMs?: number;
  /** For tests. */
  sleep?: (ms: number) => Promise<void>;
}

/** Resolves when the log was copied (and, following, the task is terminal); returns the task as last read when following. */
export async function streamLogs(client: DroverClient, id: string, opts: StreamLogsOptions): Promise<Task | null> {
  const query = { follow: opts.follow, ...(opts.attempt !== undefined ? { attempt: opts.attempt } : {}) };

  const out = sinkFor(opts.out, opts.filter);
  try {
    return await copyLog(client, id, opts, query, out);
  } finally {
    const rest = opts.filter?.end();
    if (opts.out && rest?.length) opts.out.write(rest);
  }
}

/** The filter for a log written to `out`: a terminal gets controlStripper's view, a pipe or file the raw bytes. */
export function terminalFilter(out: Writable & { isTTY?: boolean }): ByteFilter | undefined {
  return out.isTTY ? controlStripper() : undefined;
}

/** Where log bytes go: `write` returns false when `out` is full, then `drained()` waits for it. */
interface Sink {
  write(chunk: Uint8Array): boolean;
  drained(): Promise<void>;
}

function sinkFor(out: Writable | null, filter: ByteFilter | undefined): Sink | null {
  if (!out) return null;
  return {
    write: (chunk) => {
      const b = filter ? filter.write(chunk) : chunk;
      return b.length ? out.write(b) : true;
    },
    drained: () => once(out, 'drain').then(() => {}),
  };
}

async function copyLog(client: DroverClient, id: string, opts: StreamLogsOptions, query: { follow: boolean; attempt?: number }, out: Sink | null): Promise<Task | null> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const giveUpMs = opts.giveUpMs ?? 60_000;
  if (!opts.follow) {
    await copyBody(await client.logs(id, query), out, 0);
    return null;
  }

  let written = 0;
  let lastContact = Date.now();
  let backoff = 250;
  for (;;) {
    try {
      const res = await client.logs(id, query);
      lastContact = Date.now();
      written = await copyBody(res, out, written);
      // The server ends a followed log when the task is terminal; check, because
      // a proxy or a restarting server may also end it early.
      const { task } = await client.getTask(id);
      if (TERMINAL.has(task.state)) return task;
      backoff = 250;
    } catch (err) {
      if (err instanceof ApiError && err.status < 500) throw err;
      if (!(err instanceof ApiError)) lastContact = lastContactOnStreamError(err, lastContact);
      if (Date.now() - lastContact > giveUpMs) throw err;
    }
    await sleep(backoff);
    backoff = Math.min(backoff * 2, 5_000);
  }
}

/** A stream that broke mid-body still had contact; a refused connection did not. */
function lastContactOnStreamError(err: unknown, lastContact: number): number {
  return err instanceof ConnectionError ? lastContact : Date.now();
}

/**
 * Writes the body's bytes beyond the first `skip` to `out`, honouring
 * backpressure. Returns the total bytes of the log seen (max of skip and the
 * body length), so a later reconnect knows where to resume.
 */
async function copyBody(res: HttpResponse, out: Sink | null, skip: number): Promise<number> {
  let seen = 0;
  for await (const value of res.chunks()) {
    const start = seen;
    seen += value.byteLength;
    if (seen <= skip) continue;
    const chunk = start >= skip ? value : value.subarray(skip - start);
    if (out && !out.write(chunk)) await out.drained();
  }
  return Math.max(seen, skip);
}

/** Re-exported: `submit --wait` and `logs -f` take their exit status from it (task-exit.ts). */
export { waitOutcome, type WaitOutcome } from './task-exit.js';
