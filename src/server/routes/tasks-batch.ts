/**
 * POST /v1/tasks/batch (docs/api.md, "Batch submit"): 1..MAX_BATCH tasks of the
 * caller in one request and ONE store transaction (TaskStore.createTasks), all
 * or nothing. Each item is exactly a POST /v1/tasks body, checked by the same
 * schema (SubmitBody) and the same rules (toTaskSpec); the first bad item
 * fails the whole request with 400 naming it as `tasks[i].<field>`.
 *
 * Idempotency-Key: binds the whole batch (the hash of the whole body) per
 * user; store/batch.ts derives the per-item keys. 201 when this request
 * created the tasks, 200 with the same tasks for a repeat of the same body,
 * 409 for the key with another body.
 *
 * `Prefer: return=minimal` (RFC 7240; prefer.ts) answers each task as
 * `{id, state}` instead of the whole task, with `Preference-Applied`.
 * Measured (dist/probe-batch.mjs, SQLite, 1,000 × {command: "true"} a
 * request): the full answer is about 600 KB of JSON; building, serializing
 * and writing it took about 7.5 ms of the server's CPU a batch in a CPU
 * profile and half of its allocations (11 MB a batch in a sampling heap
 * profile, so young-generation GCs at the 2 MB semi-space of heap-flags.ts),
 * and the client parses it all. Sequential batches from one client,
 * alternating: 55-59 ms a batch with the whole answer, 25-27 ms with the
 * short one (PostgreSQL: 82-90 and 48-55 ms). A client that keeps only the
 * ids (the CLI's `submit --from-file` without --json) asks for the short form.
 */
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { ConflictError, InvalidInputError } from '../../core/errors.js';
import { newTaskId } from '../../core/ids.js';
import { MAX_BATCH, type NewTask } from '../../store/batch.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { describeValidation } from '../error-handler.js';
import { returnPreference } from '../prefer.js';
import { ErrorSchema, SubmitBody, SubmitPreferHeaders, TaskSchema } from '../schemas.js';
import { taskJson } from '../serialize.js';
import { requestHash, toRunAfter, toTaskSpec } from '../task-input.js';

/**
 * The body limit of this route: 8 MiB, where every other route has 1 MiB
 * (app.ts BODY_LIMIT). An ordinary task is a command, a few arguments and some
 * environment, 100-500 bytes of JSON, so 1,000 of them are 0.1-0.5 MB; 8 MiB
 * leaves an average of 8 KiB per item (small inline scripts) while bounding
 * what one request makes the server parse and hold: JSON.parse of 8 MiB takes
 * tens of ms and the parsed body a few times its size. A batch of larger
 * tasks is sent in smaller batches (the CLI splits by count only; an item of
 * up to 1 MiB still goes through POST /v1/tasks).
 */
export const BATCH_BODY_LIMIT = 8 * 1024 * 1024;

export const BatchSubmitBody = Type.Object(
  { tasks: Type.Array(SubmitBody, { minItems: 1, maxItems: MAX_BATCH, description: `1..${MAX_BATCH} task objects, each exactly a POST /v1/tasks body` }) },
  { additionalProperties: false },
);
export type BatchSubmitBody = Static<typeof BatchSubmitBody>;

const TasksEnvelope = Type.Object({ tasks: Type.Array(TaskSchema) });

/** "tasks.3.args.0" → "tasks[3].args.0": the item named by its index, its field as POST /v1/tasks names it. */
export function itemField(field: string): string {
  return field.replace(/^tasks\.(\d+)(?=\.|$)/, 'tasks[$1]');
}

export function taskBatchRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { store, clock } = ctx;

  app.post<{ Body: BatchSubmitBody; Headers: SubmitPreferHeaders }>(
    '/v1/tasks/batch',
    {
      // The same people as POST /v1/tasks (admins and users, never worker tokens).
      config: { auth: ['admin', 'user'] },
      bodyLimit: BATCH_BODY_LIMIT,
      // Validation errors come to the handler, which names the item (tasks[i]) in the field.
      attachValidation: true,
      schema: {
        tags: ['tasks'],
        summary: `Submit 1..${MAX_BATCH} tasks at once, all or nothing`,
        description:
          'Each item is a POST /v1/tasks body. Every item is checked before anything is stored; the first bad one fails the request ' +
          '(400, field "tasks[i].<field>") and no task is stored. The tasks are stored in one transaction and answered in input order. ' +
          `Body limit ${BATCH_BODY_LIMIT / (1024 * 1024)} MiB (413 beyond). With an Idempotency-Key header the batch can be repeated safely: ` +
          '201 when this request created the tasks, 200 with the same tasks when the key (per user) was seen before with the same body, ' +
          '409 when it was seen with a different body.',
        headers: SubmitPreferHeaders,
        body: BatchSubmitBody,
        response: {
          201: { description: 'Created, in input order (with Prefer: return=minimal each item is only {id, state})', ...TasksEnvelope },
          200: { description: 'A repeat of an earlier batch with the same Idempotency-Key and body: the tasks it created (with Prefer: return=minimal, {id, state} each)', ...TasksEnvelope },
          400: ErrorSchema,
          401: ErrorSchema,
          403: ErrorSchema,
          409: ErrorSchema,
          413: ErrorSchema,
        },
      },
    },
    async (req, reply) => {
      const invalid = req.validationError;
      if (invalid) {
        if (invalid.validationContext !== 'body') throw invalid; // headers: the error handler names the header
        const { field, reason } = describeValidation(invalid);
        throw new InvalidInputError(itemField(field), reason);
      }
      const p = principalOf(req);
      // Checked before anything is stored: a bad Prefer changes nothing.
      const preference = returnPreference(req.headers.prefer);
      const now = clock.now();
      const items: NewTask[] = req.body.tasks.map((body, i) => {
        try {
          return { id: newTaskId(now), spec: toTaskSpec(body), runAfter: toRunAfter(body, now) };
        } catch (err) {
          if (err instanceof InvalidInputError) throw new InvalidInputError(`tasks[${i}].${err.field}`, err.reason);
          throw err;
        }
      });
      const key = req.headers['idempotency-key'];
      const idem = key !== undefined ? { key, requestHash: requestHash(req.body) } : undefined;
      let res;
      try {
        res = await store.createTasks(p.user, items, `user:${p.user}`, now, idem);
      } catch (err) {
        if (idem && err instanceof ConflictError) {
          throw new ConflictError(`Idempotency-Key "${idem.key}" was already used for a different request body; use a new key for a new batch`);
        }
        throw err;
      }
      // Items to run later: this server's timer releases the earliest when due (the sweep covers the rest).
      const due = res.tasks.filter((t) => t.state === 'ready' && t.runAfter !== null).map((t) => t.runAfter!);
      if (due.length > 0) ctx.scheduler.wakeAtTime(Math.min(...due));
      reply.code(res.created ? 201 : 200);
      if (preference !== null) reply.header('preference-applied', `return=${preference}`);
      if (preference === 'minimal') {
        // Not the route's response schema (whole tasks): serialized as it is. The wire type is the client's MinimalTask.
        const tasks = res.tasks.map((t) => ({ id: t.id, state: t.state }));
        return reply.serializer(JSON.stringify).send({ tasks });
      }
      return reply.send({ tasks: res.tasks.map((t) => taskJson(t, p.user)) });
    },
  );
}
