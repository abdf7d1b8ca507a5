/**
 * Does a task summary belong in a list with this filter? The same rules the
 * server applies to GET /v1/tasks (state, name prefix, owner, created range,
 * id prefix), so the live stream can put a new matching task into a list the
 * page already shows without asking the server again.
 */
import type { ListTasksQuery, TaskSummary } from '../api/types';

export function matchesFilter(t: TaskSummary, f: ListTasksQuery): boolean {
  if (f.state !== undefined && t.state !== f.state) return false;
  if (f.name !== undefined && !t.name.startsWith(f.name)) return false;
  if (f.owner !== undefined && t.owner !== f.owner) return false;
  if (f.id !== undefined && !t.id.startsWith(f.id.toUpperCase())) return false;
  const created = Date.parse(t.createdAt);
  if (f.createdAfter !== undefined && !(created >= Date.parse(f.createdAfter))) return false;
  if (f.createdBefore !== undefined && !(created < Date.parse(f.createdBefore))) return false;
  return true;
}
