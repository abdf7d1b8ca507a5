/**
 * The task's log: text only (decoded, escape sequences removed; see
 * format/log-text.ts), stderr tinted, a marker where each attempt starts.
 * It opens scrolled to the end and stays there while new output arrives,
 * unless the reader scrolled up. "Load earlier" keeps the reading position.
 */
import { useLayoutEffect, useMemo, useRef, useState } from 'react';
import { errorMessage } from '../api/api-error';
import { decodeChunks } from '../format/log-text';
import { useTaskLog, type LoadedChunk } from '../hooks/use-task-log';

interface Segment {
  key: number;
  attempt: number;
  stream: string;
  text: string;
  marker: boolean;
}

function segments(chunks: readonly LoadedChunk[]): Segment[] {
  const out: Segment[] = [];
  let i = 0;
  let prevAttempt = -1;
  while (i < chunks.length) {
    const head = chunks[i]!;
    let j = i;
    const parts: Uint8Array[] = [];
    while (j < chunks.length && chunks[j]!.attempt === head.attempt && chunks[j]!.stream === head.stream) parts.push(chunks[j++]!.bytes);
    // As the CLI's log: a marker line before the output of attempt 2 and later.
    out.push({ key: head.id, attempt: head.attempt, stream: head.stream, text: decodeChunks(parts), marker: head.attempt !== prevAttempt && head.attempt >= 2 });
    prevAttempt = head.attempt;
    i = j;
  }
  return out;
}

/**
 * `active`: the task is not terminal. A log seen while its task was active keeps a
 * fixed-height box (output streaming in never moves the page); a finished task's
 * log box is as tall as its text.
 */
export function LogViewer({ taskId, generation, active }: { taskId: string; generation: string; active: boolean }) {
  const log = useTaskLog(taskId, generation);
  const everActive = useRef(active);
  if (active) everActive.current = true;
  const box = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);
  const prevHeight = useRef<{ first: number | undefined; height: number }>({ first: undefined, height: 0 });
  const segs = useMemo(() => segments(log.chunks), [log.chunks]);

  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const first = log.chunks[0]?.id;
    const prev = prevHeight.current;
    if (prev.first !== undefined && first !== undefined && first < prev.first && !atBottom.current) {
      // Earlier output was put above: keep what the reader was looking at in place.
      el.scrollTop += el.scrollHeight - prev.height;
    } else if (atBottom.current) {
      el.scrollTop = el.scrollHeight;
    }
    prevHeight.current = { first, height: el.scrollHeight };
  }, [log.chunks]);

  // Shown while the reader has scrolled away from the end of a log that is still growing.
  const [away, setAway] = useState(false);
  const onScroll = () => {
    const el = box.current;
    if (!el) return;
    atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
    setAway(!atBottom.current);
  };
  const toEnd = () => {
    const el = box.current;
    if (!el) return;
    el.scrollTop = el.scrollHeight;
    atBottom.current = true;
    setAway(false);
  };

  const status = log.loading ? 'Loading…' : log.tailing ? 'Following live output…' : log.endDropped ? 'Paused: newer output not loaded' : 'End of log';
  return (
    <div className="log">
      <div className="log-toolbar">
        {!log.atStart && log.chunks.length > 0 && (
          <button type="button" className="btn btn-small" onClick={log.loadEarlier} disabled={log.loadingEarlier} aria-busy={log.loadingEarlier}>
            Load earlier output
          </button>
        )}
        <span className={log.tailing ? 'log-status tailing' : 'log-status'} data-testid="log-status" role="status">
          {status}
        </span>
        {away && log.tailing && (
          <button type="button" className="btn btn-small" onClick={toEnd}>
            ↓ Follow the end
          </button>
        )}
        {(log.endDropped || log.error !== null) && (
          <button type="button" className="btn btn-small btn-quiet" onClick={log.reload}>
            Jump to the end
          </button>
        )}
      </div>
      {log.error !== null && (
        <p className="inline-error" role="alert">
          Log: {errorMessage(log.error)}
        </p>
      )}
      <div className={everActive.current ? 'log-box' : 'log-box log-box-ended'} ref={box} onScroll={onScroll} tabIndex={0} role="log" aria-label="Task output" data-testid="log">
        {!log.loading && log.chunks.length === 0 ? (
          <p className="log-empty">{log.tailing ? 'No output yet.' : 'No output.'}</p>
        ) : (
          <pre className="log-text">
            {log.atStart === false && log.chunks.length > 0 && <span className="log-more">… earlier output not loaded</span>}
            {segs.map((s, i) => (
              <span key={s.key} className={s.stream === 'stderr' ? 'log-seg stderr' : 'log-seg'}>
                {s.marker && (
                  <span className="log-marker">
                    {i > 0 && !segs[i - 1]!.text.endsWith('\n') ? '\n' : ''}— attempt {s.attempt} —{'\n'}
                  </span>
                )}
                {s.text}
              </span>
            ))}
          </pre>
        )}
      </div>
    </div>
  );
}
