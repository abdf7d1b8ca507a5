/**
 * False on the first render, true once the browser has painted since (two
 * animation frames, then a task). For content below something more
 * important: the run page paints its graph first and builds the 1,000-row
 * timeline after. Two frames, not one: the graph itself appears one
 * synchronous re-render after the first commit (once its frame is measured),
 * and this effect may be flushed just before that re-render, so one frame
 * could still land before the graph's first paint.
 */
import { useEffect, useState } from 'react';

export function useAfterPaint(): boolean {
  const [painted, setPainted] = useState(false);
  useEffect(() => {
    let frame = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    frame = requestAnimationFrame(() => {
      frame = requestAnimationFrame(() => {
        timer = setTimeout(() => setPainted(true), 0);
      });
    });
    return () => {
      cancelAnimationFrame(frame);
      if (timer !== undefined) clearTimeout(timer);
    };
  }, []);
  return painted;
}
