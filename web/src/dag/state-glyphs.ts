/**
 * The glyph of each task state inside SVG (the DAG graph's nodes), where the
 * badges' CSS `::before` glyphs cannot be used: the same shapes as
 * styles/badges.css, so a state looks the same in a badge and in a node and
 * is never told by colour alone. Keep the two in step.
 */
import type { TaskState } from '../api/types';

export const STATE_GLYPHS: Record<TaskState, string> = {
  ready: '○',
  waiting: '◔',
  running: '▶',
  retrying: '↻',
  succeeded: '✓',
  failed: '✕',
  cancelled: '⊘',
  skipped: '↷',
};

export function stateGlyph(state: string): string {
  return Object.hasOwn(STATE_GLYPHS, state) ? STATE_GLYPHS[state as TaskState] : '?';
}
