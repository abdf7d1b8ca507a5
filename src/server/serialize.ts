/** Internal models (epoch ms) → API JSON (ISO-8601 times), per docs/api.md. */
import type { Attempt, Task, TaskEvent } from '../core/task.js';
import type { TokenRecord } from '../store/store.js';

const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());

export function taskJson(t: Task) {
  return {
    id: t.id,
    owner: t.owner,
    name: t.name,
    kind: t.kind,
    state: t.state,
    command: t.command,
    args: t.args,
    script: t.script,
    interpreter: t.interpreter,
    env: t.env,
    timeoutMs: t.timeoutMs,
    retry: t.retry,
    priority: t.priority,
    labels: t.labels,
    requires: t.requires,
    attempts: t.attempts,
    retriesUsed: t.retriesUsed,
    lostCount: t.lostCount,
    runAfter: iso(t.runAfter),
    createdAt: iso(t.createdAt)!,
    updatedAt: iso(t.updatedAt)!,
    result: t.result,
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
