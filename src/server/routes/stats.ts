/**
 * Dashboard figures, owner-scoped like the task list (a user: their own; an
 * admin: everyone's, or ?owner=):
 *   GET /v1/stats/counts   tasks by state, from counters the store keeps (no scan);
 *   GET /v1/stats/minutes  per-minute activity in [since, until): attempts
 *                          started, tasks that ended by outcome, submit-to-start
 *                          latency of first attempts. Default the last hour, at
 *                          most 24 h; `since` is floored to its minute.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { InvalidInputError } from '../../core/errors.js';
import { TASK_STATES } from '../../core/task-state.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { CountsQuery, CountsSchema, ErrorSchema, MINUTES_MAX_WINDOW_MS, MinuteSchema, MinutesQuery } from '../schemas.js';
import { minuteJson } from '../serialize.js';
import { ownerScope } from './tasks.js';

const errors = { 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema };
const HOUR_MS = 3600_000;
const MINUTE_MS = 60_000;

/** The window of a minutes query, validated (each bad bound named). */
export function minutesWindow(q: { since?: string; until?: string }, now: number): { since: number; until: number } {
  const until = q.until !== undefined ? Date.parse(q.until) : now;
  const since = Math.floor((q.since !== undefined ? Date.parse(q.since) : until - HOUR_MS) / MINUTE_MS) * MINUTE_MS;
  if (since >= until) throw new InvalidInputError(q.since !== undefined ? 'since' : 'until', 'since must be before until');
  if (until - since > MINUTES_MAX_WINDOW_MS) throw new InvalidInputError('since', 'the window from since to until is at most 24 h');
  return { since, until };
}

export function statsRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Querystring: CountsQuery }>(
    '/v1/stats/counts',
    {
      config: { auth: ['admin', 'user'] },
      schema: { tags: ['stats'], summary: 'Tasks by state', querystring: CountsQuery, response: { 200: Type.Object({ counts: CountsSchema, total: Type.Integer() }), ...errors } },
    },
    async (req) => {
      const counts = await ctx.store.countTasksByState(ownerScope(principalOf(req), req.query.owner));
      const out = Object.fromEntries(TASK_STATES.map((s) => [s, counts[s] ?? 0])) as Record<(typeof TASK_STATES)[number], number>;
      return { counts: out, total: TASK_STATES.reduce((n, s) => n + out[s], 0) };
    },
  );

  app.get<{ Querystring: MinutesQuery }>(
    '/v1/stats/minutes',
    {
      config: { auth: ['admin', 'user'] },
      schema: {
        tags: ['stats'],
        summary: 'Per-minute activity (only minutes with some), ascending',
        querystring: MinutesQuery,
        response: { 200: Type.Object({ minutes: Type.Array(MinuteSchema) }), ...errors },
      },
    },
    async (req) => {
      const owner = ownerScope(principalOf(req), req.query.owner);
      const { since, until } = minutesWindow(req.query, ctx.clock.now());
      return { minutes: (await ctx.store.minuteStats(since, until, owner)).map(minuteJson) };
    },
  );
}
