/**
 * Reads a DAG file for `drover dag apply FILE`: YAML, or JSON (a subset of
 * YAML, but parsed as JSON when the file says it is, so a missing comma is
 * reported as JSON, not as a puzzling YAML error). The file's shape is the
 * body of POST /v1/dags (server/dag-schemas.ts DagBody); this module only
 * parses it and remembers where each value is, so that any later error (a
 * local check, or the server's 400 naming `steps[3].depends_on[0]`) can name
 * the line.
 *
 * Which parser: `.json` → JSON; `.yaml`/`.yml` → YAML; anything else (and
 * stdin) by content: JSON when the first character is `{`, else YAML.
 *
 * YAML rules (the `yaml` package, YAML 1.2 core schema): duplicate keys are an
 * error (a second `name:` in a step would otherwise win silently), `<<` merge
 * keys are allowed (a shared block of settings for several steps), one
 * document per file, at most 100 aliases resolved (no "billion laughs").
 * In JSON a duplicate key is an error too, for the same reason.
 *
 * Every error is a UsageError (exit 2) starting with the file's name:
 * `etl.yaml:4:5: a key given twice ...`.
 */
import { readFileSync } from 'node:fs';
import { isNode, LineCounter, parseDocument, type Document } from 'yaml';
import { safeText } from '../output.js';
import { UsageError } from '../usage-error.js';

export type DagFileFormat = 'yaml' | 'json';
/** A path into the document: `['steps', 3, 'depends_on', 0]`. */
export type ValuePath = ReadonlyArray<string | number>;

export interface DagFile {
  /** How messages name the file: the path as given, or "stdin". */
  name: string;
  format: DagFileFormat;
  /** The parsed document: what POST /v1/dags is sent. */
  body: unknown;
  /**
   * The 1-based line of the value at `path`, or of its nearest ancestor that
   * has one (a merged `<<` value has none of its own); null when not even the
   * first segment is found.
   */
  lineOf(path: ValuePath): number | null;
}

/** Bad DAG file content: the message names the file (and the line and column when known). */
export class DagFileError extends UsageError {}

/** At most this many aliases are expanded (yaml's default); more is refused as a resource attack. */
const MAX_ALIASES = 100;

export function detectFormat(name: string, text: string): DagFileFormat {
  if (/\.json$/i.test(name)) return 'json';
  if (/\.ya?ml$/i.test(name)) return 'yaml';
  return text.trimStart().startsWith('{') ? 'json' : 'yaml';
}

/** Reads and parses FILE ("-": stdin). */
export function readDagFile(file: string, read: (file: string) => string = (f) => readFileSync(f === '-' ? 0 : f, 'utf8')): DagFile {
  let text: string;
  try {
    text = read(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new UsageError(`invalid FILE "${safeText(file)}": cannot read it (${code})`);
  }
  return parseDagText(file === '-' ? 'stdin' : file, text);
}

export function parseDagText(name: string, raw: string, format: DagFileFormat = detectFormat(name, raw)): DagFile {
  const text = raw.replace(/^\uFEFF/, '');
  if (text.trim() === '') throw new DagFileError(`${safeText(name)}: the file is empty; expected a DAG: name and steps (see docs/api.md, "DAGs")`);
  const lines = new LineCounter();
  // For JSON the YAML parser runs with its JSON schema: it then also reports where a bad literal (`tru`) is, which V8's message does not say.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, merge: format === 'yaml', uniqueKeys: true, ...(format === 'json' ? { schema: 'json' as const } : {}) });
  const at = (offset: number) => {
    const p = lines.linePos(offset);
    return `${safeText(name)}:${p.line}:${p.col}`;
  };
  let body: unknown;
  if (format === 'json') {
    body = parseJson(name, text, doc, at);
  } else {
    const err = doc.errors[0];
    if (err) throw new DagFileError(`${at(err.pos[0])}: ${yamlReason(err.code, err.message)}`);
    try {
      body = doc.toJS({ maxAliasCount: MAX_ALIASES });
    } catch (e) {
      // An alias to no anchor, or too many aliases: yaml says which.
      throw new DagFileError(`${safeText(name)}: ${(e as Error).message}`);
    }
    // An alias inside its own anchor's node (`steps: &s [ {depends_on: *s} ]`) makes a loop no JSON can hold.
    if (hasCycle(body)) throw new DagFileError(`${safeText(name)}: an alias refers to a node that contains it (a loop); a DAG file must be a tree`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new DagFileError(`${safeText(name)}: expected a mapping with the DAG's name and steps at the top (got ${describe(body)})`);
  }
  return { name, format, body, lineOf: (path) => lineOf(doc, lines, path) };
}

/** True when `value` contains itself (only an alias in YAML can do that). */
function hasCycle(value: unknown, open = new Set<object>()): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (open.has(value)) return true;
  open.add(value);
  const found = Object.values(value).some((v) => hasCycle(v, open));
  open.delete(value);
  return found;
}

function parseJson(name: string, text: string, doc: Document, at: (offset: number) => string): unknown {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (e) {
    const msg = (e as Error).message;
    // V8: "... in JSON at position 42" (Node 22 adds "(line 3 column 5)"); "Unexpected end of JSON input"; or no position at all.
    const pos = /at position (\d+)/.exec(msg);
    const reason = msg.replace(/\s*in JSON at position \d+.*$/, '').replace(/, .* is not valid JSON$/, '');
    let offset: number | null = pos ? Number(pos[1]) : /end of JSON input/.test(msg) ? text.length : null;
    if (offset === null && doc.errors[0]) offset = doc.errors[0].pos[0];
    throw new DagFileError(`${offset === null ? safeText(name) : at(offset)}: not valid JSON: ${reason}`);
  }
  // JSON.parse keeps the last of two equal keys without a word; the YAML parse of the same text saw them.
  const dup = doc.errors.find((x) => x.code === 'DUPLICATE_KEY');
  if (dup) throw new DagFileError(`${at(dup.pos[0])}: ${yamlReason(dup.code, dup.message)}`);
  return body;
}

function yamlReason(code: string, message: string): string {
  switch (code) {
    case 'DUPLICATE_KEY':
      return 'a key given twice in one mapping (the second would silently replace the first)';
    case 'MULTIPLE_DOCS':
      return 'more than one YAML document (---): a DAG file holds one DAG';
    case 'TAB_AS_INDENT':
      return 'a tab used as indentation: YAML indents with spaces';
    default:
      return `not valid YAML: ${message}`;
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'string') return `the text ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)}`;
  return `a ${typeof v}`;
}

function lineOf(doc: Document, lines: LineCounter, path: ValuePath): number | null {
  for (let n = path.length; n > 0; n--) {
    const node = doc.getIn(path.slice(0, n), true);
    if (isNode(node) && node.range) return lines.linePos(node.range[0]).line;
  }
  return null;
}
