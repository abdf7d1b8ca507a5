/** Slots used of total, as a bar and as numbers. */
export function SlotsMeter({ used, total }: { used: number; total: number }) {
  const pct = total > 0 ? Math.min(100, Math.round((used / total) * 100)) : 0;
  return (
    <span className="slots">
      <span className="slots-bar" role="meter" aria-valuemin={0} aria-valuemax={total} aria-valuenow={used} aria-label={`${used} of ${total} slots used`}>
        <span className="slots-fill" style={{ width: `${pct}%` }} />
      </span>
      <span className="slots-text">
        {used}/{total}
      </span>
    </span>
  );
}
