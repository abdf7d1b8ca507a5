/**
 * GET /v1/cron/next: the next fire times of an expression that is not saved
 * (the dashboard's "Add schedule" form shows them while the user types; the
 * CLI's `drover cron next` computes the same locally). Pure computation with
 * the core (core/cron) that POST /v1/schedules and the cron service use, so
 * what it lists is what a schedule with that expression would fire; nothing
 * is read or written. People only, like the schedule routes.
 *
 * Not under /v1/schedules/: `GET /v1/schedules/next` would shadow a schedule
 * named "next" (a static route wins over `/v1/schedules/:name`).
 */
import type { FastifyInstance } from 'fastify';
import { InvalidInputError } from '../../core/errors.js';
import { nextFireTimes } from '../../core/cron/next-fire.js';
import { parseSchedule } from '../../core/cron/schedule.js';
import { parseIsoInstant } from '../../core/iso-instant.js';
import type { AppContext } from '../context.js';
import { isoTime } from '../iso-time.js';
import { CronNextAnswer, CronNextQuery } from '../schedule-schemas.js';

/** How many times an answer lists when `count` is not given (as `drover cron next`, and the schedule detail's `next`). */
export const CRON_NEXT_DEFAULT_COUNT = 5;

export function cronNextRoutes(app: FastifyInstance, ctx: Pick<AppContext, 'clock'>): void {
  app.get<{ Querystring: CronNextQuery }>(
    '/v1/cron/next',
    {
      config: { auth: ['admin', 'user'] },
      schema: {
        tags: ['schedules'],
        summary: 'The next fire times of a cron expression, without creating anything',
        description:
          '`schedule` and `tz` are read exactly as POST /v1/schedules reads them, and a bad one is the same 400 naming the same field. ' +
          '`from` (an ISO 8601 time with a zone; default now) and `count` (default 5) choose which times.',
        querystring: CronNextQuery,
        // 400/401/403 (and 503) are added for every route by openapi-errors.ts.
        response: { 200: CronNextAnswer },
      },
    },
    async (req) => {
      const q = req.query;
      const schedule = parseSchedule({ expr: q.schedule, tz: q.tz });
      let from = ctx.clock.now();
      if (q.from !== undefined) {
        const t = parseIsoInstant(q.from);
        if (t === null) throw new InvalidInputError('from', `"${q.from}" is not an ISO 8601 time with a zone (e.g. 2026-03-08T00:00:00Z or 2026-03-08T00:00:00-05:00)`);
        from = t;
      }
      const next = nextFireTimes(schedule, from, q.count ?? CRON_NEXT_DEFAULT_COUNT).map(isoTime);
      return { schedule: schedule.expr, tz: schedule.tz, next };
    },
  );
}
