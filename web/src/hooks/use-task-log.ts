/**
 * A task's log, read in pages of chunks (GET /v1/tasks/:id/log-chunks):
 * it opens at its end (the last page), pages backwards on request, and while
 * the task runs, tails it with a long-poll (`after` = last chunk id, `wait`),
 * which the server answers when a chunk arrives, the task ends, or the wait
 * runs out. A log is never loaded whole: at most MAX_BYTES are held; beyond
 * that the oldest (while tailing) or newest (while paging back) chunks are
 * dropped and can be loaded again.
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import { api } from '../api/endpoints';
import { ApiError } from '../api/api-error';
import type { LogChunk } from '../api/types';
import { decodeBase64 } from '../format/log-text';

export interface LoadedChunk {
  id: number;
  attempt: number;
  stream: string;
  bytes: Uint8Array;
}

export interface TaskLog {
  chunks: LoadedChunk[];
  /** Nothing before the first chunk held. */
  atStart: boolean;
  /** Chunks after the last one held were dropped (paged far back); the tail is paused. */
  endDropped: boolean;
  /** The server says more may come; the tail is waiting for it. */
  tailing: boolean;
  loading: boolean;
  loadingEarlier: boolean;
  error: unknown;
  loadEarlier(): void;
  /** Reload the end of the log (after paging far back, or after an error). */
  reload(): void;
}

const PAGE = 32;
const WAIT_MS = 25_000;
const MAX_BYTES = 4 * 1024 * 1024;

const toLoaded = (c: LogChunk): LoadedChunk => ({ id: c.id, attempt: c.attempt, stream: c.stream, bytes: decodeBase64(c.data) });
const size = (cs: readonly LoadedChunk[]) => cs.reduce((n, c) => n + c.bytes.length, 0);

interface State {
  chunks: LoadedChunk[];
  atStart: boolean;
  endDropped: boolean;
  running: boolean;
  loading: boolean;
  loadingEarlier: boolean;
  error: unknown;
}

const initial: State = { chunks: [], atStart: false, endDropped: false, running: false, loading: true, loadingEarlier: false, error: null };

/** `generation` changes (e.g. the task went back to waiting after a retry) restart reading at the end. */
export function useTaskLog(taskId: string, generation: string): TaskLog {
  const [state, setState] = useState<State>(initial);
  const stateRef = useRef(state);
  stateRef.current = state;
  const [reloadKey, setReloadKey] = useState(0);

  useEffect(() => {
    const abort = new AbortController();
    const { signal } = abort;
    setState(initial);
    (async () => {
      let after: number;
      try {
        const first = await api.logChunks(taskId, { limit: PAGE }, signal);
        const chunks = first.chunks.map(toLoaded);
        after = chunks.length ? chunks[chunks.length - 1]!.id : 0;
        setState({ ...initial, chunks, atStart: first.atStart, running: first.running, loading: false });
        if (!first.running) return;
      } catch (err) {
        if (!signal.aborted) setState((s) => ({ ...s, loading: false, error: err }));
        return;
      }
      let failures = 0;
      while (!signal.aborted) {
        if (stateRef.current.endDropped) return;
        try {
          const page = await api.logChunks(taskId, { after, limit: PAGE, wait: WAIT_MS }, signal);
          failures = 0;
          const fresh = page.chunks.map(toLoaded).filter((c) => c.id > after);
          if (fresh.length) after = fresh[fresh.length - 1]!.id;
          setState((s) => {
            let chunks = fresh.length ? [...s.chunks, ...fresh] : s.chunks;
            let atStart = s.atStart;
            while (chunks.length > 1 && size(chunks) > MAX_BYTES) {
              chunks = chunks.slice(1);
              atStart = false;
            }
            return { ...s, chunks, atStart, running: page.running, error: null };
          });
          if (!page.running && page.chunks.length < PAGE) return;
        } catch (err) {
          if (signal.aborted) return;
          if (err instanceof ApiError && err.status < 500) {
            setState((s) => ({ ...s, running: false, error: err }));
            return;
          }
          failures++;
          setState((s) => ({ ...s, error: err }));
          await new Promise((r) => setTimeout(r, Math.min(30_000, 1000 * 2 ** Math.min(failures, 5))));
        }
      }
    })();
    return () => abort.abort();
  }, [taskId, generation, reloadKey]);

  const loadEarlier = useCallback(() => {
    const s = stateRef.current;
    const first = s.chunks[0];
    if (s.loadingEarlier || s.atStart || !first) return;
    setState((x) => ({ ...x, loadingEarlier: true }));
    api.logChunks(taskId, { before: first.id, limit: PAGE }).then(
      (page) =>
        setState((x) => {
          if (x.chunks[0]?.id !== first.id) return { ...x, loadingEarlier: false };
          let chunks = [...page.chunks.map(toLoaded).filter((c) => c.id < first.id), ...x.chunks];
          let endDropped = x.endDropped;
          while (chunks.length > 1 && size(chunks) > MAX_BYTES) {
            chunks = chunks.slice(0, -1);
            endDropped = true;
          }
          return { ...x, chunks, atStart: page.atStart, endDropped, loadingEarlier: false, error: null };
        }),
      (err) => setState((x) => ({ ...x, loadingEarlier: false, error: err })),
    );
  }, [taskId]);

  const reload = useCallback(() => setReloadKey((k) => k + 1), []);

  return {
    chunks: state.chunks,
    atStart: state.atStart,
    endDropped: state.endDropped,
    tailing: state.running && !state.endDropped,
    loading: state.loading,
    loadingEarlier: state.loadingEarlier,
    error: state.error,
    loadEarlier,
    reload,
  };
}
