/**
 * Opens the tab's live stream while a session is signed in and wires it to
 * the query caches (cache-patcher.ts). Pages read the connection state with
 * useLiveStatus() (the header's "Live" indicator).
 */
import { createContext, useContext, useEffect, useState, useSyncExternalStore, type ReactNode } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { api } from '../api/endpoints';
import { ApiError } from '../api/api-error';
import type { TaskSummary, WorkerInfo } from '../api/types';
import { CachePatcher } from './cache-patcher';
import { LiveStream, type LiveStatus } from './live-stream';

const LiveContext = createContext<LiveStream | null>(null);

export function LiveProvider({ children }: { children: ReactNode }) {
  const qc = useQueryClient();
  const [stream] = useState(() => {
    const patcher = new CachePatcher(qc);
    const helloAt = { t: 0 };
    const s = new LiveStream({
      hello(_cursor, first) {
        helloAt.t = Date.now();
        if (first) patcher.refetchOlderThan(helloAt.t);
      },
      changes(data) {
        const d = data as { tasks?: unknown; workers?: unknown } | null;
        const tasks = Array.isArray(d?.tasks) ? (d.tasks as TaskSummary[]).filter(isSummary) : [];
        const workers = Array.isArray(d?.workers) ? (d.workers as WorkerInfo[]).filter(isWorker) : [];
        patcher.applyChanges(tasks, workers);
      },
      reset() {
        patcher.reset();
      },
      async closed() {
        // Is the session still valid? A 401 here also sends the tab to the sign-in page (http.ts).
        try {
          await api.me();
          return true;
        } catch (err) {
          return !(err instanceof ApiError && err.unauthorized);
        }
      },
    });
    return s;
  });
  useEffect(() => {
    stream.start();
    return () => stream.stop();
  }, [stream]);
  return <LiveContext.Provider value={stream}>{children}</LiveContext.Provider>;
}

export function useLiveStatus(): LiveStatus {
  const s = useContext(LiveContext);
  return useSyncExternalStore(s ? s.subscribe : noopSubscribe, s ? s.getStatus : stoppedStatus);
}

const noopSubscribe = () => () => {};
const stoppedStatus = (): LiveStatus => 'stopped';

function isSummary(t: unknown): t is TaskSummary {
  const o = t as Record<string, unknown> | null;
  return !!o && typeof o.id === 'string' && typeof o.state === 'string' && typeof o.updatedAt === 'string';
}

function isWorker(w: unknown): w is WorkerInfo {
  const o = w as Record<string, unknown> | null;
  return !!o && typeof o.id === 'string' && typeof o.state === 'string';
}
