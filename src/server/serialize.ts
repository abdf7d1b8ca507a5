/** Internal models (epoch ms) → API JSON (ISO-8601 times), per docs/api.md. */
import type { Attempt, LogChunk, Task, TaskEvent, TaskSpec } from '../core/task.js';
import type { MinuteStat, TaskSummary, TokenRecord } from '../store/store.js';
import { isoTime } from './iso-time.js';

const iso = (t: number | null): string | null => (t === null ? null : isoTime(t));

/**
 * What a task (or a schedule's template) runs and how, as the API shows it;
 * with `envRedacted` the env keys carry "" instead of their values.
 */
export function specJson(t: TaskSpec, envRedacted: boolean) {
  return {
    name: t.name,
    kind: t.kind,
    command: t.command,
    args: t.args,
    script: t.script,
    interpreter: t.interpreter,
    env: envRedacted ? Object.fromEntries(Object.keys(t.env).map((k) => [k, ''])) : t.env,
    envRedacted,
    timeoutMs: t.timeoutMs,
    cwd: t.cwd,
    retry: t.retry,
    priority: t.priority,
    labels: t.labels,
    requires: t.requires,
  };
}

/**
 * A task as `viewer` may see it: env values go only to the task's owner.
 * Anyone else (an admin) gets the keys with "" for every value and
 * `envRedacted: true`, so a secret passed in env is not shown to whoever can
 * list all tasks.
 */
export function taskJson(t: Task, viewer: string) {
  const envRedacted = viewer !== t.owner;
  return {
    id: t.id,
    owner: t.owner,
    ...specJson(t, envRedacted),
    state: t.state,
    attempts: t.attempts,
    retriesUsed: t.retriesUsed,
    lostCount: t.lostCount,
    runAfter: iso(t.runAfter),
    scheduleId: t.scheduleId,
    scheduledAt: iso(t.scheduledAt),
    dagRunId: t.dagRunId,
    dagStep: t.dagStep,
    skipReason: t.skipReason,
    createdAt: iso(t.createdAt)!,
    updatedAt: iso(t.updatedAt)!,
    result: t.result,
    outputs: t.outputs,
  };
}

/** The fencing token is the attempt's secret (core/task.ts): it is deliberately not listed here. */
export function attemptJson(a: Attempt) {
  return {
    id: a.id,
    number: a.number,
    workerId: a.workerId,
    state: a.state,
    startedAt: iso(a.startedAt)!,
    endedAt: iso(a.endedAt),
    exitCode: a.exitCode,
    signal: a.signal,
    error: a.error,
    durationMs: a.durationMs,
  };
}

export function eventJson(e: TaskEvent) {
  return { id: e.id, from: e.from, to: e.to, reason: e.reason, actor: e.actor, at: iso(e.at)!, detail: e.detail };
}

export function tokenJson(t: TokenRecord) {
  return { id: t.id, name: t.name, user: t.user, role: t.role, createdAt: iso(t.createdAt)!, revokedAt: iso(t.revokedAt), lastUsedAt: iso(t.lastUsedAt) };
}

export type TaskSummaryJson = ReturnType<typeof taskSummaryJson>;

export function taskSummaryJson(t: TaskSummary) {
  return {
    id: t.id,
    owner: t.owner,
    name: t.name,
    kind: t.kind,
    state: t.state,
    priority: t.priority,
    attempts: t.attempts,
    retriesUsed: t.retriesUsed,
    workerId: t.workerId,
    createdAt: iso(t.createdAt)!,
    updatedAt: iso(t.updatedAt)!,
    startedAt: iso(t.startedAt),
    endedAt: iso(t.endedAt),
    durationMs: t.durationMs,
    exitCode: t.exitCode,
    signal: t.signal,
    error: t.error,
    outcome: t.outcome,
    runAfter: iso(t.runAfter),
    scheduleId: t.scheduleId,
    scheduledAt: iso(t.scheduledAt),
    dagRunId: t.dagRunId,
    dagStep: t.dagStep,
    skipReason: t.skipReason,
  };
}

export function logChunkJson(c: LogChunk) {
  return { id: c.id, attempt: c.attempt, stream: c.stream, at: iso(c.at)!, data: c.data.toString('base64') };
}

/** latencyAvgMs/latencyMaxMs are null for a minute in which no first attempt started. */
export function minuteJson(m: MinuteStat) {
  const n = m.latencyCount;
  return {
    minute: iso(m.minute)!,
    started: m.started,
    succeeded: m.succeeded,
    failed: m.failed,
    cancelled: m.cancelled,
    latencyCount: n,
    latencyAvgMs: n > 0 ? Math.round(m.latencySumMs / n) : null,
    latencyMaxMs: n > 0 ? m.latencyMaxMs : null,
  };
}
