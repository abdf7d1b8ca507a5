/** The current time, re-read every `everyMs` (for ages such as "last heartbeat 4 s ago"). One timer per interval, shared. */
import { useSyncExternalStore } from 'react';

const clocks = new Map<number, { now: number; listeners: Set<() => void>; timer: ReturnType<typeof setInterval> | null }>();

function clock(everyMs: number) {
  let c = clocks.get(everyMs);
  if (!c) {
    c = { now: Date.now(), listeners: new Set(), timer: null };
    clocks.set(everyMs, c);
  }
  return c;
}

export function useNow(everyMs = 1000): number {
  const c = clock(everyMs);
  return useSyncExternalStore(
    (fn) => {
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
    () => c.now,
  );
}
