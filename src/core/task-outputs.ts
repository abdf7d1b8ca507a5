/**
 * Task outputs: the small KEY=VALUE results a task hands on (issue 12: a DAG
 * step's dependents receive them as environment variables).
 *
 * Every attempt's environment names a file, DROVER_OUTPUT (an absolute path
 * inside the attempt's work directory; the file does not exist at start). A
 * task writes lines to it; when its process has exited with success, the
 * agent reads the file, parses it here and sends the result in its `exit`
 * report; the server checks it again here (a worker is not trusted) and the
 * store records it on the task once, when the task succeeds.
 *
 * The format (also in docs/architecture.md and the README):
 *   - UTF-8 text, at most OUTPUT_LIMITS.maxBytes (64 KiB) in the file;
 *   - one KEY=VALUE per line (lines end with \n; a trailing \r is stripped);
 *   - blank lines (nothing, or only spaces and tabs) and lines starting with
 *     `#` are ignored;
 *   - KEY matches OUTPUT_KEY_PATTERN: a letter or _, then up to 63 letters,
 *     digits or _;
 *   - VALUE is the rest of the line after the first `=` (it may contain `=`,
 *     and may be empty); no NUL anywhere;
 *   - a key given twice is an error, compared ignoring case: dependents see
 *     keys as upper-case environment variable names, where `rows` and `ROWS`
 *     would be one variable;
 *   - at most OUTPUT_LIMITS.maxKeys (128) keys.
 * A file that breaks a rule fails the attempt (outcome `failed`, so retries
 * apply) with a message naming DROVER_OUTPUT, the line and the reason, e.g.
 * `DROVER_OUTPUT line 3: expected KEY=VALUE`. A file with no key at all is
 * the same as no file: no outputs.
 *
 * Pure: bytes in, a result out; no I/O (the agent's reading, with its own
 * guards against links and oversized files, is src/worker/output-file.ts).
 */

/** The environment variable that names the file, and how messages name it. */
export const OUTPUT_ENV = 'DROVER_OUTPUT';

/** The file's name inside the attempt's work directory. */
export const OUTPUT_FILE_NAME = 'drover-output.env';

export const OUTPUT_LIMITS = {
  /** Bytes in the file (the agent reads at most one more to tell a file that is too large). */
  maxBytes: 64 * 1024,
  maxKeys: 128,
  /** Characters in a key. */
  maxKeyLength: 64,
} as const;

/** A key as a JSON-schema / RegExp source (the protocol's schema uses it too). */
export const OUTPUT_KEY_PATTERN = '^[A-Za-z_][A-Za-z0-9_]{0,63}$';
const KEY_RE = new RegExp(OUTPUT_KEY_PATTERN);
/** A key's characters, whatever its length (to say "too long" rather than "invalid"). */
const KEY_CHARS_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const BLANK_RE = /^[ \t]*$/;
/** A lone surrogate: a string holding one is not UTF-8 text. */
const LONE_SURROGATE_RE = /\p{Cs}/u;

/** Task outputs: key → value, as stored on a task and shown by the API. */
export type TaskOutputs = Record<string, string>;

export type OutputsParse =
  | { ok: true; outputs: TaskOutputs }
  /** `message` is what the attempt's error says: `DROVER_OUTPUT line N: reason` (or `DROVER_OUTPUT: reason` for the whole file). */
  | { ok: false; line: number | null; reason: string; message: string };

const fail = (line: number | null, reason: string): OutputsParse => ({
  ok: false,
  line,
  reason,
  message: line === null ? `${OUTPUT_ENV}: ${reason}` : `${OUTPUT_ENV} line ${line}: ${reason}`,
});

/** A key quoted for a message: JSON escapes control characters, and a long one is cut. */
function quoted(key: string): string {
  return JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key);
}

/** Why `key` is not a valid output key, or null. */
function keyProblem(key: string): string | null {
  if (KEY_RE.test(key)) return null;
  if (key === '') return 'empty key (expected KEY=VALUE)';
  if (KEY_CHARS_RE.test(key)) return `key ${quoted(key)} is longer than ${OUTPUT_LIMITS.maxKeyLength} characters`;
  return `invalid key ${quoted(key)} (a key is a letter or _, then letters, digits or _)`;
}

/**
 * Parses the bytes of a DROVER_OUTPUT file (see the format at the top). The
 * caller passes at most maxBytes + 1 bytes; more than maxBytes is an error.
 */
export function parseTaskOutputs(bytes: Uint8Array): OutputsParse {
  if (bytes.length > OUTPUT_LIMITS.maxBytes) return fail(null, `the file is larger than ${OUTPUT_LIMITS.maxBytes} bytes (64 KiB)`);
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const entries: Array<[string, string]> = [];
  /** Upper-cased key → the line it was first given on. */
  const seen = new Map<string, number>();
  let start = 0;
  for (let line = 1; start < bytes.length; line++) {
    let end = bytes.indexOf(0x0a, start);
    const next = end === -1 ? bytes.length : end + 1;
    if (end === -1) end = bytes.length;
    if (end > start && bytes[end - 1] === 0x0d) end--;
    const raw = bytes.subarray(start, end);
    start = next;
    if (raw.includes(0)) return fail(line, 'contains a NUL character');
    let text: string;
    try {
      text = decoder.decode(raw);
    } catch {
      return fail(line, 'not valid UTF-8');
    }
    if (BLANK_RE.test(text) || text.startsWith('#')) continue;
    const eq = text.indexOf('=');
    if (eq === -1) return fail(line, 'expected KEY=VALUE');
    const key = text.slice(0, eq);
    const problem = keyProblem(key);
    if (problem) return fail(line, problem);
    const upper = key.toUpperCase();
    const first = seen.get(upper);
    if (first !== undefined) return fail(line, `key ${quoted(key)} given twice (first on line ${first}; keys are compared ignoring case)`);
    if (entries.length >= OUTPUT_LIMITS.maxKeys) return fail(line, `more than ${OUTPUT_LIMITS.maxKeys} keys`);
    seen.set(upper, line);
    entries.push([key, text.slice(eq + 1)]);
  }
  // fromEntries defines own properties: a key such as __proto__ is kept as data, never a prototype.
  return { ok: true, outputs: Object.fromEntries(entries) };
}

/** Bytes of `outputs` written as a file of KEY=VALUE lines (the smallest file that gives them). */
export function outputsFileBytes(outputs: TaskOutputs): number {
  const enc = new TextEncoder();
  let n = 0;
  for (const [k, v] of Object.entries(outputs)) n += enc.encode(k).length + 1 + enc.encode(v).length + 1;
  return n;
}

/**
 * Why `value` could not have come from parseTaskOutputs, or null when it
 * could: what the server checks of the outputs in an `exit` report, since a
 * worker is not trusted. The reason names the key.
 */
export function taskOutputsProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'expected an object of string values';
  const entries = Object.entries(value);
  if (entries.length > OUTPUT_LIMITS.maxKeys) return `more than ${OUTPUT_LIMITS.maxKeys} keys`;
  const seen = new Set<string>();
  for (const [k, v] of entries) {
    const problem = keyProblem(k);
    if (problem) return problem;
    const upper = k.toUpperCase();
    if (seen.has(upper)) return `key ${quoted(k)} given twice (keys are compared ignoring case)`;
    seen.add(upper);
    if (typeof v !== 'string') return `value of ${quoted(k)}: expected a string`;
    if (v.includes('\u0000')) return `value of ${quoted(k)}: contains a NUL character`;
    if (v.includes('\n')) return `value of ${quoted(k)}: contains a newline`;
    if (LONE_SURROGATE_RE.test(v)) return `value of ${quoted(k)}: not valid UTF-8 text (a lone surrogate)`;
  }
  const bytes = outputsFileBytes(value as TaskOutputs);
  if (bytes > OUTPUT_LIMITS.maxBytes) return `${bytes} bytes as KEY=VALUE lines, over the ${OUTPUT_LIMITS.maxBytes}-byte limit`;
  return null;
}
