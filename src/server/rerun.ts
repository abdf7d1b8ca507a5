/**
 * A rerun (POST /v1/tasks/:id/rerun) is a fresh task with the original's spec:
 * what to run and how, never its history (state, attempts, result) nor its
 * schedule (a rerun runs now).
 */
import type { Task, TaskSpec } from '../core/task.js';

/** The spec part of a stored task, field by field (a new field of TaskSpec must be added here: the type says so). */
export function specOf(t: Task): TaskSpec {
  const spec: Required<TaskSpec> = {
    name: t.name,
    kind: t.kind,
    command: t.command,
    args: [...t.args],
    script: t.script,
    interpreter: [...t.interpreter],
    env: { ...t.env },
    timeoutMs: t.timeoutMs,
    retry: { ...t.retry },
    priority: t.priority,
    labels: { ...t.labels },
    requires: { ...t.requires },
    cwd: t.cwd,
  };
  return spec;
}
