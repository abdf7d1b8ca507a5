/**
 * The `return` preference of an HTTP `Prefer` request header (RFC 7240):
 * `Prefer: return=minimal` asks for a short answer, `return=representation`
 * for the full one (what the routes send anyway).
 *
 * RFC 7240 §2: preferences are comma-separated, each `token [= word]` with
 * optional `;` parameters; names are case-insensitive; the first instance of
 * a preference counts; a server ignores preferences it does not support
 * (`respond-async`, `wait=5`, `handling=strict` and any unknown token pass
 * here without effect). A `return` with a value other than the two above is
 * not a preference we could ignore in good faith, since the client asked for
 * a shape it would not get: it is refused (InvalidInputError, field
 * `Prefer`, the header as written), like any other bad header.
 */
import { InvalidInputError } from '../core/errors.js';

export type ReturnPreference = 'minimal' | 'representation';

/** The longest Prefer value taken, all its fields together (a real one is a few dozen bytes); longer is a 400. */
export const PREFER_MAX_CHARS = 1024;

/** `return`'s value in `header`, or null when the header is absent or has no `return` preference. */
export function returnPreference(header: string | string[] | undefined): ReturnPreference | null {
  if (header === undefined) return null;
  // Several Prefer fields are one list (RFC 9110 §5.3).
  const text = Array.isArray(header) ? header.join(',') : header;
  if (text.length > PREFER_MAX_CHARS) throw new InvalidInputError('Prefer', `must be at most ${PREFER_MAX_CHARS} characters`);
  for (const item of text.split(',')) {
    // "token [= word]" before the first ";" (parameters are not used by `return`).
    const head = item.split(';', 1)[0]!.trim();
    if (head === '') continue;
    const eq = head.indexOf('=');
    const name = (eq < 0 ? head : head.slice(0, eq)).trim().toLowerCase();
    if (name !== 'return') continue;
    let value = eq < 0 ? '' : head.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    const v = value.toLowerCase();
    if (v === 'minimal' || v === 'representation') return v;
    throw new InvalidInputError('Prefer', `return must be "minimal" or "representation", got ${JSON.stringify(value.slice(0, 40))}`);
  }
  return null;
}
