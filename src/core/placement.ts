/**
 * Placement by labels: a task's `requires` (K=V pairs, `drover submit
 * --require K=V`) places it only on workers whose labels (`drover worker
 * --label K=V`) hold every pair with the same value. A task with no
 * requirement runs anywhere. The stores express the same rule in the claim
 * statement (SQLite: json_each; PostgreSQL: jsonb containment); this is the
 * reference the contract suite checks them against.
 */
export function satisfies(labels: Readonly<Record<string, string>>, requires: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(requires)) {
    if (!Object.prototype.hasOwnProperty.call(labels, k) || labels[k] !== v) return false;
  }
  return true;
}
