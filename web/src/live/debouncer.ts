/**
 * Calls `fn` once `waitMs` after the last trigger, but at least every
 * `maxWaitMs` while triggers keep coming, so a steady stream of changes
 * still refreshes what depends on them (counts) about once a second.
 */
export function debouncer(fn: () => void, waitMs: number, maxWaitMs: number): { trigger(): void; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let first = 0;
  const fire = () => {
    timer = null;
    first = 0;
    fn();
  };
  return {
    trigger() {
      const now = Date.now();
      if (first === 0) first = now;
      if (timer !== null) clearTimeout(timer);
      timer = setTimeout(fire, Math.max(0, Math.min(waitMs, first + maxWaitMs - now)));
    },
    cancel() {
      if (timer !== null) clearTimeout(timer);
      timer = null;
      first = 0;
    },
  };
}
