/**
 * Errors about a value of a DAG file, worded the way the file spells it:
 * `etl.yaml: steps[3].depends_on[0]: step "load" depends on "extrct", which
 * is not a step of this DAG (line 14)`.
 *
 * The server names fields two ways: its DAG checks as `steps[3].depends_on[0]`
 * (server/dag-input.ts), its schema validator as `steps.3.depends_on.0`
 * (server/error-handler.ts). Both are read into one path, written back in
 * the first spelling, and looked up in the parsed file for the line (and the
 * step's name, when the reason does not already say it).
 */
import { safeText } from '../output.js';
import type { DagFile, ValuePath } from './dag-file.js';

/** "steps[3].depends_on[0]" or "steps.3.depends_on.0" → ['steps', 3, 'depends_on', 0]; digits index a list only where the file has one. */
export function fieldPath(field: string, body: unknown): (string | number)[] {
  const path: (string | number)[] = [];
  let at: unknown = body;
  for (const m of field.matchAll(/\[(\d+)\]|([^.[\]]+)/g)) {
    const key: string | number = m[1] !== undefined || (/^\d+$/.test(m[2]!) && Array.isArray(at)) ? Number(m[1] ?? m[2]) : m[2]!;
    path.push(key);
    at = at !== null && typeof at === 'object' ? (at as Record<string | number, unknown>)[key] : undefined;
  }
  return path;
}

/** ['steps', 3, 'depends_on', 0] → "steps[3].depends_on[0]". */
export function fieldName(path: ValuePath): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

/** The value at `path` in the parsed file (undefined when there is none). */
export function valueAt(body: unknown, path: ValuePath): unknown {
  let at: unknown = body;
  for (const p of path) at = at !== null && typeof at === 'object' ? (at as Record<string | number, unknown>)[p] : undefined;
  return at;
}

/** The one-line message for a problem with the value at `path` (see the header). */
export function describeFieldError(file: DagFile, path: ValuePath, reason: string): string {
  const where: string[] = [];
  if (path[0] === 'steps' && typeof path[1] === 'number') {
    const name = valueAt(file.body, ['steps', path[1], 'name']);
    if (typeof name === 'string' && !reason.includes(`"${name}"`)) where.push(`step "${name}"`);
  }
  const line = path.length ? file.lineOf(path) : null;
  if (line !== null) where.push(`line ${line}`);
  const field = path.length ? `${fieldName(path)}: ` : '';
  return safeText(`${file.name}: ${field}${reason}${where.length ? ` (${where.join(', ')})` : ''}`);
}

/**
 * A 400 (or 413) of POST /v1/dags as the file spells it. `field` "body"
 * (or none) is the file as a whole. A value the schema wanted as text but the
 * YAML parser read as a number or boolean (`COUNT: 5`, `DEBUG: yes` is text
 * in YAML 1.2, but `true` is not) gets the hint to quote it.
 */
export function describeServerError(file: DagFile, field: string | undefined, reason: string): string {
  const path = field === undefined || field === 'body' ? [] : fieldPath(field, file.body);
  const v = valueAt(file.body, path);
  const hint = /must be string/.test(reason) && (typeof v === 'number' || typeof v === 'boolean') ? `; quote it in the file: "${String(v)}"` : '';
  return describeFieldError(file, path, reason + hint);
}
