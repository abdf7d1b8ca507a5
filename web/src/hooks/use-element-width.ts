/**
 * The width of an element's border box (offsetWidth: its scrollbar included,
 * so a scrollbar appearing when content arrives changes nothing and costs no
 * second layout; callers leave room for one), kept current with a ResizeObserver; null
 * until the first measurement, which happens in a layout effect (before the
 * first paint). A component that sizes heavy content by it (the DAG graph,
 * the run timeline) renders only its empty frame while this is null, so the
 * content is built once, at the right width, instead of once at a guess and
 * again after measuring (at 1,000 steps that second build cost a second).
 */
import { useLayoutEffect, useState, type RefObject } from 'react';

export function useElementWidth(ref: RefObject<HTMLElement | null>): number | null {
  const [width, setWidth] = useState<number | null>(null);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    setWidth(el.offsetWidth);
    const ro = new ResizeObserver(() => setWidth(el.offsetWidth));
    ro.observe(el);
    return () => ro.disconnect();
  }, [ref]);
  return width;
}
