/**
 * Fitting a table to the terminal (`drover dag ...`; `drover ls` has its own
 * rules in task-table.ts): cells are made inert first (safeText, one line),
 * so widths count what the terminal shows; then the named columns are cut
 * with an ellipsis, in the order given, each to no less than its minimum,
 * until the widest line fits or nothing more may be cut.
 */
import { safeText } from './output.js';
import { truncate } from './task-table.js';

/** What formatTable would show of `s`: one line, controls escaped. */
export function cell(s: string): string {
  return safeText(s.replace(/[\r\n\t]+/g, ' '));
}

/** Cuts columns of `rows` in place (see the header); `headers` are never cut. */
export function fitColumns(headers: readonly string[], rows: string[][], width: number, cuts: ReadonlyArray<{ col: number; min: number }>): void {
  const colWidth = (i: number) => Math.max(headers[i]!.length, ...rows.map((r) => r[i]!.length));
  const total = () => headers.reduce((sum, _, i) => sum + colWidth(i), 0) + 2 * (headers.length - 1);
  for (const { col, min } of cuts) {
    const over = total() - width;
    if (over <= 0) return;
    const to = Math.max(min, colWidth(col) - over);
    for (const r of rows) r[col] = truncate(r[col]!, to);
  }
}
