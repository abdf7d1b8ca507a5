/**
 * One step in the DAG graph (dag-graph.tsx): a box with the step's name, its
 * condition when not the default, and in a run its state as colour AND glyph
 * (state-glyphs.ts: the badges' shapes), so no state is told by colour alone.
 * In a run the box is a link to the step's task (a plain SVG <a>: the graph
 * has one click handler that navigates in the app). Memoized on plain
 * values: a live update re-renders only the boxes whose state changed. A
 * name cut short carries a <title> with the whole name; others have none
 * (at 1,000 steps every element counts).
 */
import { memo } from 'react';
import { stateGlyph } from '../dag/state-glyphs';
import { conditionLabel } from '../dag/step-text';

/** Rough width of a character of the node font (13px system-ui), for cutting long names; the full name is in the title. */
const CHAR_PX = 7.4;

interface Props {
  name: string;
  x: number;
  y: number;
  width: number;
  height: number;
  when: string;
  /** A run's step: its task's state and id. */
  state?: string;
  taskId?: string;
  critical?: boolean;
}

export const DagGraphNode = memo(function DagGraphNode({ name, x, y, width, height, when, state, taskId, critical }: Props) {
  const cond = conditionLabel(when);
  const textX = state ? 30 : 12;
  const maxChars = Math.max(4, Math.floor((width - textX - 8) / CHAR_PX));
  const shown = name.length > maxChars ? `${name.slice(0, maxChars - 1)}…` : name;
  const nameY = cond ? height / 2 - 3 : height / 2 + 5;
  const cls = `dag-node dag-node-${state ?? 'plain'}${critical ? ' dag-node-critical' : ''}`;
  const content = (
    <>
      {shown !== name && <title>{name}</title>}
      <rect width={width} height={height} rx={6} />
      {state && (
        <text className="dag-node-glyph" x={15} y={height / 2 + 5} textAnchor="middle">
          {stateGlyph(state)}
        </text>
      )}
      <text className="dag-node-name" x={textX} y={nameY}>
        {shown}
      </text>
      {cond && (
        <text className="dag-node-cond" x={textX} y={height / 2 + 13}>
          {cond}
        </text>
      )}
    </>
  );
  const title = `Step ${name}${state ? `: ${state}` : ''}${cond ? `, ${cond}` : ''}`;
  const transform = `translate(${x} ${y})`;
  // One element per box holds its position, classes and name: the link in a run (React types <a> as HTML's, which has no
  // transform; inside an <svg> it is SVG's <a>, which has), a labelled image in a definition. At 1,000 boxes each element counts.
  const svgTransform = { transform } as Record<string, string>;
  if (state && taskId) {
    return (
      <a href={`/tasks/${taskId}`} {...svgTransform} className={`dag-node-link ${cls}`} aria-label={title} data-step={name} data-state={state} data-task-id={taskId}>
        {content}
      </a>
    );
  }
  return (
    <g role="img" aria-label={title} data-step={name} transform={transform} className={cls}>
      {content}
    </g>
  );
});
