/**
 * A task's outputs: the KEY=VALUE lines its succeeding attempt wrote to
 * $DROVER_OUTPUT (docs/architecture.md, "Task outputs"). Keys and values are
 * task data and are rendered as text only (React escapes them); a value keeps
 * its spaces and wraps anywhere, so a long one cannot widen the page.
 */
import { KvTable } from './kv-table';

export function OutputsTable({ outputs }: { outputs: Record<string, string> | null }) {
  const entries = Object.entries(outputs ?? {});
  if (entries.length === 0) {
    return (
      <p className="muted">
        None. A task hands on outputs by writing <code>KEY=VALUE</code> lines to the file named by <code>$DROVER_OUTPUT</code>; they are kept when it succeeds.
      </p>
    );
  }
  return <KvTable entries={entries} keyHeading="Key" valueClass="output-value" valueTestId="output-value" testId="outputs" value={(v) => <code>{v}</code>} />;
}
