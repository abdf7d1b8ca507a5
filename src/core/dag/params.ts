/**
 * Run parameters (`drover dag run NAME --param K=V`): checked and merged with
 * the DAG's declared defaults. Every step sees each one as DROVER_PARAM_<KEY>
 * (step-env.ts). Keys follow the output key rule ([A-Za-z_][A-Za-z0-9_]*, at
 * most 64 characters, unique regardless of case: they become upper-case
 * environment names); values are text without NUL, at most 64 KiB each.
 * A DAG that declares parameters takes only those (a typo is an error, not a
 * silently unused value); one that declares none takes any.
 */
import { InvalidInputError } from '../errors.js';

export const PARAM_KEY_PATTERN = '^[A-Za-z_][A-Za-z0-9_]{0,63}$';
const KEY_RE = new RegExp(PARAM_KEY_PATTERN);
export const MAX_PARAMS = 64;
export const MAX_PARAM_VALUE_CHARS = 65536;

/** Checks one map of parameters (a run's or a definition's defaults); `field` names it in errors. */
export function checkParams(field: string, params: Readonly<Record<string, unknown>>): Record<string, string> {
  const keys = Object.keys(params);
  if (keys.length > MAX_PARAMS) throw new InvalidInputError(field, `at most ${MAX_PARAMS} parameters (got ${keys.length})`);
  const seen = new Map<string, string>();
  const out: Record<string, string> = {};
  for (const k of keys) {
    if (!KEY_RE.test(k)) throw new InvalidInputError(`${field}.${k}`, 'a parameter name is a letter or "_", then letters, digits or "_" (at most 64)');
    const upper = k.toUpperCase();
    const other = seen.get(upper);
    if (other !== undefined) throw new InvalidInputError(`${field}.${k}`, `"${k}" and "${other}" are the same parameter (names are compared in upper case: DROVER_PARAM_${upper})`);
    seen.set(upper, k);
    const v = params[k];
    if (typeof v !== 'string') throw new InvalidInputError(`${field}.${k}`, `expected a string value (got ${v === null ? 'null' : typeof v})`);
    if (v.length > MAX_PARAM_VALUE_CHARS) throw new InvalidInputError(`${field}.${k}`, `at most ${MAX_PARAM_VALUE_CHARS} characters`);
    if (v.includes('\0')) throw new InvalidInputError(`${field}.${k}`, 'must not contain NUL (\\u0000) characters');
    out[k] = v;
  }
  return out;
}

/** A run's parameters: the declared defaults overridden by `given`; throws InvalidInputError naming `params.<key>`. */
export function resolveParams(declared: Readonly<Record<string, string>> | null, given: Readonly<Record<string, unknown>>): Record<string, string> {
  const run = checkParams('params', given);
  if (declared === null) return run;
  for (const k of Object.keys(run)) {
    if (!Object.hasOwn(declared, k)) {
      const names = Object.keys(declared);
      throw new InvalidInputError(`params.${k}`, `this DAG declares no parameter "${k}" (it declares ${names.length ? names.join(', ') : 'none'})`);
    }
  }
  return { ...declared, ...run };
}
