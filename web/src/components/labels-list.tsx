/** key=value chips (labels, placement requirements). Text only. */
export function LabelsList({ labels, empty = 'none' }: { labels: Record<string, string>; empty?: string }) {
  const entries = Object.entries(labels);
  if (entries.length === 0) return <span className="muted">{empty}</span>;
  return (
    <ul className="chips">
      {entries.map(([k, v]) => (
        <li key={k} className="chip" title={`${k}=${v}`}>
          <span className="chip-key">{k}</span>={v}
        </li>
      ))}
    </ul>
  );
}
