/**
 * Flag and operand validation of `drover dag` (commands/dag.ts): pure
 * functions that return what the request needs or throw UsageError naming
 * the flag, so bad input never reaches the server (exit 2).
 */
import { MAX_PARAM_VALUE_CHARS, MAX_PARAMS, PARAM_KEY_PATTERN } from '../../core/dag/params.js';
import { safeText } from '../output.js';
import { parseIntFlag, parseKeyValue } from '../parse.js';
import { parseScheduleName } from '../schedule-name.js';
import { UsageError } from '../usage-error.js';

const PARAM_KEY = new RegExp(PARAM_KEY_PATTERN);

/** A DAG name as the server accepts it (core/dag/dag-definition.ts DAG_NAME_PATTERN: the schedule names' rule). */
export function parseDagName(raw: string, what = 'DAG name'): string {
  return parseScheduleName(raw, what);
}

/**
 * `--param K=V` (repeatable) as the run's params. The key follows the
 * server's rule (core/dag/params.ts); a key given twice, or two keys that
 * differ only in case (both would be DROVER_PARAM_<KEY>), is an error rather
 * than a silent last-one-wins.
 */
export function parseParams(raws: readonly string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  const seen = new Map<string, string>();
  for (const raw of raws ?? []) {
    const [k, v] = parseKeyValue('--param', raw);
    if (!PARAM_KEY.test(k)) throw new UsageError(`invalid --param "${safeText(raw)}": a parameter name is a letter or "_", then letters, digits or "_" (at most 64)`);
    const other = seen.get(k.toUpperCase());
    if (other !== undefined) {
      throw new UsageError(
        other === k
          ? `invalid --param "${safeText(raw)}": ${k} is given twice`
          : `invalid --param "${safeText(raw)}": "${k}" and "${other}" are the same parameter (steps see both as DROVER_PARAM_${k.toUpperCase()})`,
      );
    }
    if (v.length > MAX_PARAM_VALUE_CHARS) throw new UsageError(`invalid --param ${k}: the value is longer than ${MAX_PARAM_VALUE_CHARS} characters`);
    seen.set(k.toUpperCase(), k);
    out[k] = v;
  }
  if (seen.size > MAX_PARAMS) throw new UsageError(`invalid --param: at most ${MAX_PARAMS} parameters (got ${seen.size})`);
  return out;
}

/** `--version N` of `dag show`: a stored version number. */
export function parseVersionFlag(raw: string | undefined): number | undefined {
  return raw === undefined ? undefined : parseIntFlag('--version', raw, 1, 2 ** 31 - 1);
}

/** `--limit N` of the run lists (the API's page size, 1..500). */
export function parseLimitFlag(raw: string | undefined, dflt: number): number {
  return raw === undefined ? dflt : parseIntFlag('--limit', raw, 1, 500);
}

/** `--owner USER` (admins): a non-empty user name. */
export function parseOwnerFlag(raw: string | undefined): string | undefined {
  if (raw !== undefined && !raw.trim()) throw new UsageError('invalid --owner "": expected a user name');
  return raw;
}
