/**
 * The boundary of the worker protocol: every frame an agent sends is parsed
 * and checked here against a closed schema with size limits before the
 * session acts on it (src/core/protocol.ts has the types and the meaning).
 * A frame that fails is a protocol error: the session logs the reason and
 * closes that connection only; nothing else changes.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { FENCING_TOKEN_PATTERN } from '../core/ids.js';
import { LABEL_LIMITS, LOG_LIMITS, MAX_EXIT_ERROR_CHARS, MAX_MESSAGES_PER_FRAME, MAX_PREFETCH, type AgentMessage } from '../core/protocol.js';
import { OUTPUT_KEY_PATTERN, OUTPUT_LIMITS, taskOutputsProblem } from '../core/task-outputs.js';
import { WORKER_ID_PATTERN } from './pattern-rules.js';

/**
 * Largest frame the server accepts from an agent. A log chunk is 64 KiB
 * (base64 ≈ 87 KiB); the largest is an `exit` with outputs: 64 KiB of
 * KEY=VALUE text can take up to 6 times that as JSON (a control character
 * is written \u0001), about 390 KiB, and a valid report must never be
 * refused (the agent would resend it after every reconnect).
 */
export const MAX_AGENT_FRAME_BYTES = 512 * 1024;
/** Most attempts one hello or heartbeat may list (slots and prefetch are capped at 1024 each; unacked ends add some). */
export const MAX_LISTED_ATTEMPTS = 4096;

const AttemptId = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
const Token = Type.String({ pattern: FENCING_TOKEN_PATTERN });
/** No NUL: PostgreSQL text cannot hold one, and a frame the store cannot write must be refused here, not loop through resends. */
const Text = (maxLength: number) => Type.String({ maxLength, pattern: '^[^\\u0000]*$' });
const closed = { additionalProperties: false } as const;

const Hello = Type.Object(
  {
    type: Type.Literal('hello'),
    workerId: Type.String({ pattern: WORKER_ID_PATTERN }),
    hostname: Text(255),
    slots: Type.Integer({ minimum: 1, maximum: 1024 }),
    // The same bounds as `drover worker --label` (LABEL_LIMITS): a label the CLI accepts is never a protocol error.
    labels: Type.Record(Type.String({ minLength: 1, maxLength: LABEL_LIMITS.keyLength, pattern: '^[^\\u0000]*$' }), Text(LABEL_LIMITS.valueLength), { maxProperties: LABEL_LIMITS.count }),
    version: Text(16),
    running: Type.Array(Type.Object({ attemptId: AttemptId, fencingToken: Token }, closed), { maxItems: MAX_LISTED_ATTEMPTS }),
    killed: Type.Optional(Type.Array(Type.Object({ attemptId: AttemptId, fencingToken: Token, reason: Text(1000) }, closed), { maxItems: MAX_LISTED_ATTEMPTS })),
    draining: Type.Optional(Type.Boolean()),
    prefetch: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_PREFETCH })),
  },
  closed,
);
const Draining = Type.Object({ type: Type.Literal('draining') }, closed);
const Prefetch = Type.Object({ type: Type.Literal('prefetch'), prefetch: Type.Integer({ minimum: 0, maximum: MAX_PREFETCH }) }, closed);
const Heartbeat = Type.Object(
  { type: Type.Literal('heartbeat'), seq: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }), running: Type.Array(AttemptId, { maxItems: MAX_LISTED_ATTEMPTS }) },
  closed,
);
const Started = Type.Object({ type: Type.Literal('started'), attemptId: AttemptId, fencingToken: Token, pid: Type.Integer({ minimum: 0, maximum: 2 ** 31 }) /* 0: the noop executor, which starts no process */ }, closed);
const Log = Type.Object(
  {
    type: Type.Literal('log'),
    attemptId: AttemptId,
    fencingToken: Token,
    seq: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr')]),
    data: Type.String({ maxLength: Math.ceil(LOG_LIMITS.maxChunkBytes / 3) * 4, pattern: '^[A-Za-z0-9+/]*={0,2}$' }),
  },
  closed,
);
const Exit = Type.Object(
  {
    type: Type.Literal('exit'),
    attemptId: AttemptId,
    fencingToken: Token,
    outcome: Type.Union(['succeeded', 'failed', 'timed_out', 'cancelled', 'lost', 'start_failed', 'returned'].map((o) => Type.Literal(o))),
    exitCode: Type.Union([Type.Integer({ minimum: -(2 ** 31), maximum: 2 ** 31 - 1 }), Type.Null()]),
    signal: Type.Union([Text(32), Type.Null()]),
    error: Type.Union([Text(MAX_EXIT_ERROR_CHARS), Type.Null()]),
    durationMs: Type.Number({ minimum: 0, maximum: 1e13 }),
    // The shape here; the rules a schema cannot state (keys compared ignoring case, the
    // size as a file) in checkMessage, with core/task-outputs.ts, as the agent applied them.
    outputs: Type.Optional(
      Type.Record(Type.String({ pattern: OUTPUT_KEY_PATTERN }), Type.String({ maxLength: OUTPUT_LIMITS.maxBytes }), {
        maxProperties: OUTPUT_LIMITS.maxKeys,
        additionalProperties: false,
      }),
    ),
  },
  closed,
);

const SCHEMAS: Record<AgentMessage['type'], TSchema> = { hello: Hello, draining: Draining, prefetch: Prefetch, heartbeat: Heartbeat, started: Started, log: Log, exit: Exit };

const ajv = new Ajv({ allErrors: false, strict: false, coerceTypes: false, useDefaults: false, removeAdditional: false });
const validators = Object.fromEntries(Object.entries(SCHEMAS).map(([k, s]) => [k, ajv.compile(s)])) as Record<AgentMessage['type'], ReturnType<typeof ajv.compile>>;

export type ParsedFrame = { ok: true; msgs: AgentMessage[] } | { ok: false; reason: string };

/**
 * Parses and validates one frame: a message, or an array of 1 to
 * MAX_MESSAGES_PER_FRAME messages (core/protocol.ts). Any invalid message
 * rejects the whole frame. The reason names the field (with its index in an
 * array frame) and what is wrong with it.
 */
export function parseAgentFrame(data: Buffer, isBinary: boolean): ParsedFrame {
  if (isBinary) return { ok: false, reason: 'binary frame (the protocol is JSON text)' };
  if (data.length > MAX_AGENT_FRAME_BYTES) return { ok: false, reason: `frame of ${data.length} bytes is over the ${MAX_AGENT_FRAME_BYTES}-byte limit` };
  let v: unknown;
  try {
    v = JSON.parse(data.toString('utf8'));
  } catch {
    return { ok: false, reason: 'frame is not JSON' };
  }
  if (!Array.isArray(v)) {
    const one = checkMessage(v);
    return typeof one === 'string' ? { ok: false, reason: one } : { ok: true, msgs: [one] };
  }
  if (v.length === 0 || v.length > MAX_MESSAGES_PER_FRAME) return { ok: false, reason: `frame: an array frame holds 1 to ${MAX_MESSAGES_PER_FRAME} messages, got ${v.length}` };
  const msgs: AgentMessage[] = [];
  for (const [i, item] of v.entries()) {
    const m = checkMessage(item);
    if (typeof m === 'string') return { ok: false, reason: `[${i}] ${m}` };
    msgs.push(m);
  }
  return { ok: true, msgs };
}

/** One message of a frame, validated: the message, or why not. */
function checkMessage(v: unknown): AgentMessage | string {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'frame is not a JSON object';
  const type = (v as { type?: unknown }).type;
  if (typeof type !== 'string' || !Object.prototype.hasOwnProperty.call(validators, type)) {
    return `type: unknown message type ${JSON.stringify(type)?.slice(0, 40)}`;
  }
  const validate = validators[type as AgentMessage['type']];
  if (!validate(v)) {
    const e = validate.errors?.[0];
    const field = e ? `${type}${e.instancePath.replace(/\//g, '.')}` : type;
    return `${field}: ${e?.message ?? 'invalid'}${e?.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty).slice(0, 40)})` : ''}`;
  }
  if (type === 'exit') {
    const m = v as Extract<AgentMessage, { type: 'exit' }>;
    if (m.outputs !== undefined) {
      if (m.outcome !== 'succeeded') return `exit.outputs: only an exit with outcome succeeded carries outputs (got ${m.outcome})`;
      const problem = taskOutputsProblem(m.outputs);
      if (problem) return `exit.outputs: ${problem}`;
    }
  }
  return v as AgentMessage;
}

export type HelloMessage = Static<typeof Hello>;
