/** Keyset paging: newest page, one page newer (history of cursors), one page older (the server's nextCursor). */
interface Props {
  hasNewer: boolean;
  canStepNewer: boolean;
  nextCursor: string | null | undefined;
  pageNumber: number | null;
  shown: number;
  busy: boolean;
  onNewest(): void;
  onNewer(): void;
  onOlder(cursor: string): void;
}

export function Pager({ hasNewer, canStepNewer, nextCursor, pageNumber, shown, busy, onNewest, onNewer, onOlder }: Props) {
  return (
    <nav className="pager" aria-label="Pages of tasks">
      <button type="button" className="btn btn-quiet" disabled={!hasNewer} onClick={onNewest}>
        ⇤ Newest
      </button>
      <button type="button" className="btn" disabled={!hasNewer || !canStepNewer} onClick={onNewer}>
        ← Newer
      </button>
      <span className="pager-info" aria-live="polite">
        {pageNumber !== null ? `Page ${pageNumber}` : 'Page'} · {shown} {shown === 1 ? 'task' : 'tasks'}
        {busy ? ' · loading…' : ''}
      </span>
      <button type="button" className="btn" disabled={!nextCursor} onClick={() => nextCursor && onOlder(nextCursor)}>
        Older →
      </button>
    </nav>
  );
}
