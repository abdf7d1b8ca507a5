/**
 * A task's outputs: the KEY=VALUE lines its succeeding attempt wrote to
 * $DROVER_OUTPUT (docs/architecture.md, "Task outputs"). Keys and values are
 * task data and are rendered as text only (React escapes them); a value keeps
 * its spaces and wraps anywhere, so a long one cannot widen the page.
 */
export function OutputsTable({ outputs }: { outputs: Record<string, string> | null }) {
  const entries = Object.entries(outputs ?? {});
  if (entries.length === 0) {
    return (
      <p className="muted">
        None. A task hands on outputs by writing <code>KEY=VALUE</code> lines to the file named by <code>$DROVER_OUTPUT</code>; they are kept when it succeeds.
      </p>
    );
  }
  return (
    <table className="table kv-table" data-testid="outputs">
      <thead>
        <tr>
          <th scope="col">Key</th>
          <th scope="col">Value</th>
        </tr>
      </thead>
      <tbody>
        {entries.map(([k, v]) => (
          <tr key={k}>
            <td>
              <code>{k}</code>
            </td>
            <td className="output-value" data-testid="output-value">
              <code>{v}</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
