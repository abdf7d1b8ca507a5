/**
 * The Run form's values ↔ the request's `params`, and where the API's answer
 * about one belongs. A DAG that declares parameters gets one field each
 * (their defaults filled in); one that declares none takes any, typed as
 * KEY=VALUE lines. The API judges names and values (core/dag/params.ts) and
 * names the field `params.KEY`.
 */
import { parsePairs, FormInputError } from '../submit/form-model';

/** A form field: one declared parameter, or the free KEY=VALUE text. */
export type ParamField = `param:${string}` | 'free';

export const paramFieldId = (f: ParamField): string => (f === 'free' ? 'run-params' : `run-param-${f.slice('param:'.length)}`);

export function paramsBody(declared: Record<string, string> | null, values: Record<string, string>, free: string): Record<string, string> {
  if (declared !== null) return { ...values };
  try {
    // The submit form's KEY=VALUE parser (it names a field of its own form in its errors; the reason is what we keep).
    return parsePairs('env', free) ?? {};
  } catch (err) {
    if (err instanceof FormInputError) throw new ParamInputError('free', err.reason);
    throw err;
  }
}

export class ParamInputError extends Error {
  constructor(
    readonly field: ParamField,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/** The field an API error names (`params.KEY`, or `params`), or null for the form as a whole. */
export function paramFieldOf(declared: Record<string, string> | null, apiField: string | undefined): ParamField | null {
  if (apiField === undefined || !(apiField === 'params' || apiField.startsWith('params.'))) return null;
  if (declared === null) return 'free';
  const key = apiField.slice('params.'.length);
  return apiField !== 'params' && Object.hasOwn(declared, key) ? `param:${key}` : null;
}
