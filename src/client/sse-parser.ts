/**
 * A Server-Sent Events parser (the WHATWG EventSource stream format), fed
 * text as it arrives in any chunking: lines end with LF, CRLF or CR; `:`
 * starts a comment; `event`, `data`, `id` and `retry` fields; a blank line
 * dispatches the event if it has data. An `id` line sets the last event id
 * even when no event follows (Drover's keepalive uses that to move a quiet
 * stream's resume position).
 */
export interface SseMessage {
  event: string;
  data: string;
  /** The last event id as of this message. */
  id: string | null;
}

export class SseParser {
  /** The id a reconnect should send as Last-Event-ID. */
  lastEventId: string | null = null;
  /** The server's `retry:` in ms, if it sent one. */
  retryMs: number | null = null;
  private buf = '';
  private event = '';
  private data: string[] = [];
  private pendingCr = false;

  /** Parses a chunk; returns the messages it completed. */
  push(chunk: string): SseMessage[] {
    const out: SseMessage[] = [];
    let text = chunk;
    // A CR at the end of the previous chunk may be the first half of CRLF.
    if (this.pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.pendingCr = false;
    this.buf += text;
    let start = 0;
    for (let i = 0; i < this.buf.length; i++) {
      const ch = this.buf[i];
      if (ch !== '\n' && ch !== '\r') continue;
      this.line(this.buf.slice(start, i), out);
      if (ch === '\r') {
        if (i + 1 === this.buf.length) this.pendingCr = true;
        else if (this.buf[i + 1] === '\n') i++;
      }
      start = i + 1;
    }
    this.buf = this.buf.slice(start);
    return out;
  }

  private line(line: string, out: SseMessage[]): void {
    if (line === '') {
      if (this.data.length) out.push({ event: this.event || 'message', data: this.data.join('\n'), id: this.lastEventId });
      this.event = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.event = value;
        return;
      case 'data':
        this.data.push(value);
        return;
      case 'id':
        if (!value.includes('\0')) this.lastEventId = value;
        return;
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        return;
    }
  }
}
