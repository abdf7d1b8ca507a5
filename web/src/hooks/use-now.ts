/**
 * The current time, re-read every `everyMs` (for ages such as "last heartbeat
 * 4 s ago"). One timer per interval, shared, running while anyone listens.
 *
 * Each clock's subscribe and getSnapshot are made once, with the clock: React
 * resubscribes whenever it is handed a new subscribe function, and a
 * resubscription that restarts a stopped timer moves `now`, which re-renders,
 * which resubscribed again (an endless loop once a page's only listener
 * re-rendered, e.g. the DAG run page).
 */
import { useSyncExternalStore } from 'react';

interface Clock {
  now: number;
  listeners: Set<() => void>;
  timer: ReturnType<typeof setInterval> | null;
  subscribe(fn: () => void): () => void;
  getSnapshot(): number;
}

const clocks = new Map<number, Clock>();

function clock(everyMs: number): Clock {
  const existing = clocks.get(everyMs);
  if (existing) return existing;
  const c: Clock = {
    now: Date.now(),
    listeners: new Set(),
    timer: null,
    subscribe(fn) {
      c.listeners.add(fn);
      if (!c.timer) {
        c.now = Date.now();
        c.timer = setInterval(() => {
          c.now = Date.now();
          for (const l of c.listeners) l();
        }, everyMs);
      }
      return () => {
        c.listeners.delete(fn);
        if (c.listeners.size === 0 && c.timer) {
          clearInterval(c.timer);
          c.timer = null;
        }
      };
    },
    getSnapshot: () => c.now,
  };
  clocks.set(everyMs, c);
  return c;
}

export function useNow(everyMs = 1000): number {
  const c = clock(everyMs);
  return useSyncExternalStore(c.subscribe, c.getSnapshot);
}
