/**
 * The parser of every application/json body (it takes the place of
 * Fastify's own). The same parse with the same protection: secure-json-parse
 * refuses a "__proto__" key, and a "constructor" key holding "prototype"
 * (prototype poisoning), as Fastify's default does. What differs is the
 * answer: Fastify gives "Body is not valid JSON" for every failure, a
 * refused key included; this one names the reason, and where the text stops
 * being JSON when the parser says (line and column, counted from 1).
 *
 * Runs after Fastify has read the body as a string within the route's body
 * limit (a larger body is a 413 before any of this). The reason quotes none
 * of the body: V8's message for an unexpected token carries a piece of the
 * text, which is cut off here.
 */
import type { FastifyInstance } from 'fastify';
import { parse as secureJsonParse } from 'secure-json-parse';
import { InvalidInputError } from '../core/errors.js';

const POISONING = { protoAction: 'error', constructorAction: 'error' } as const;

export function installJsonBodyParser(app: FastifyInstance): void {
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}

/** The parsed body; InvalidInputError (field `body`) naming why it is refused. */
export function parseJsonBody(text: string): unknown {
  if (text.length === 0) throw new InvalidInputError('body', 'empty JSON body');
  try {
    return secureJsonParse(text, POISONING);
  } catch (err) {
    throw new InvalidInputError('body', jsonProblem(text, (err as Error).message));
  }
}

/**
 * The reason for secure-json-parse's refusal ("Object contains forbidden
 * prototype property") or for V8's SyntaxError, which is one of:
 * "... in JSON at position 42" (or "... after JSON at position 42"; Node 22
 * adds "(line 3 column 5)"), "Unexpected end of JSON input", or
 * `Unexpected token 'x', "<a piece of the text>" is not valid JSON` (no
 * position; the piece may start or end with "...").
 */
function jsonProblem(text: string, message: string): string {
  if (/forbidden prototype property/.test(message)) return 'a "__proto__" key, or a "constructor" key holding "prototype", is not allowed';
  const pos = /at position (\d+)/.exec(message);
  const offset = pos ? Number(pos[1]) : /end of JSON input/.test(message) ? text.length : null;
  const token = /^Unexpected token '(.)'/su.exec(message);
  const reason = token
    ? `Unexpected token '${token[1]}'`
    : message.replace(/\s*(in JSON )?at position \d+.*$/s, '').replace(/, (\.\.\.)?".*$/s, '').replace(/ is not valid JSON$/, '');
  return `not valid JSON: ${reason}${offset === null ? '' : ` (${lineColumn(text, offset)})`}`;
}

function lineColumn(text: string, offset: number): string {
  let line = 1;
  let from = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    from = i + 1;
  }
  return `line ${line}, column ${offset - from + 1}`;
}
