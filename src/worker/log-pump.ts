/**
 * Bounded, flow-controlled capture of one attempt's stdout and stderr.
 *
 * Contract:
 * - Output becomes chunks of at most `maxChunkBytes`, numbered by one `seq`
 *   per attempt from 0 across both streams, in the order the pipes were read.
 *   Reads of one stream that the consumer has not pulled yet are merged, so a
 *   lagging consumer gets fewer, larger chunks rather than many tiny ones.
 * - The consumer pulls with `next()` when it can send. A pulled chunk stays in
 *   the unacked window until `ack(seq)` (cumulative) covers it: that window is
 *   what the agent re-sends after a reconnect.
 * - In-flight bytes = read but not acked (pending + unacked), and never more
 *   than `maxInFlightBytes`: the pump takes from a stream (paused mode,
 *   `read(n)`) only as many bytes as there is room for. When there is none,
 *   it stops taking; the stream's own buffer fills, Node stops reading the
 *   pipe, and the child blocks in write(2), which is the intended
 *   backpressure. Acks make room and reading resumes (once there is room for
 *   a reasonable chunk, not for every freed byte).
 *   Memory per attempt is thus at most maxInFlightBytes + each stream's
 *   buffer (its highWaterMark + one 64 KiB read) + the kernel pipe buffer.
 * - The unacked window is also capped in chunks (`maxUnackedChunks`): each
 *   chunk costs a message and some bookkeeping beyond its bytes.
 * - At most `maxKeptBytes` of an attempt's output (both streams together)
 *   are kept: the read that crosses it is cut there, one marker line on
 *   stderr says so, and everything after is read and dropped (counted in
 *   `droppedBytes`), so the task neither blocks on a full pipe nor fills the
 *   server's disk: a task looping on `yes` is a log of the limit's size.
 * Work happens per 'readable' event, bounded by the room left, never in a
 * loop over an unbounded buffer, so the event loop stays free for heartbeats.
 */
import type { Readable } from 'node:stream';

export type StreamName = 'stdout' | 'stderr';

export interface OutputChunk {
  seq: number;
  stream: StreamName;
  data: Buffer;
}

export interface LogPumpOptions {
  maxChunkBytes: number;
  maxInFlightBytes: number;
  /** Default 1024. */
  maxUnackedChunks?: number;
  /** Output bytes kept per attempt; the rest is dropped after a marker line (default: no limit). */
  maxKeptBytes?: number;
  /** Called when `next()` may return something new, or when the streams have closed. */
  onOutput?: () => void;
}

export interface LogPumpStats {
  inFlightBytes: number;
  /** The largest in-flight value ever reached: what tests hold against the bound. */
  peakInFlightBytes: number;
  bytesRead: number;
  paused: boolean;
  /** How many times the pipes were paused for lack of acks. */
  pauseCount: number;
  /** Seq the next chunk will get (= number of chunks handed out). */
  nextSeq: number;
  /** Highest seq acked; -1 before the first ack. */
  ackedSeq: number;
  /** Output read past maxKeptBytes and dropped. */
  droppedBytes: number;
}

/** The line that ends a log cut at `limit` bytes. */
export function cutMarker(limit: number): string {
  return `\n[drover: this attempt's output passed its log limit of ${limit} bytes; the rest was not kept]\n`;
}

interface Pending {
  stream: StreamName;
  bufs: Buffer[];
  bytes: number;
}

export class LogPump {
  private readonly streams: Array<{ stream: Readable; name: StreamName }> = [];
  private readonly pending: Pending[] = [];
  /** Handed out, not acked; consecutive seqs in order. */
  private readonly window: OutputChunk[] = [];
  private pendingBytes = 0;
  private windowBytes = 0;
  private seq = 0;
  private acked = -1;
  private open = 0;
  private isPaused = false;
  private discarding = false;
  private peak = 0;
  private read = 0;
  private pauses = 0;
  /** Output bytes kept so far (the marker not counted), and past the limit, dropped. */
  private kept = 0;
  private dropped = 0;
  private readonly maxUnackedChunks: number;
  private resolveEnded!: () => void;
  /** Resolves when every attached stream has closed (EOF, error or destroy). */
  readonly ended: Promise<void> = new Promise((r) => (this.resolveEnded = r));

  constructor(private readonly opts: LogPumpOptions) {
    if (opts.maxChunkBytes < 1 || opts.maxInFlightBytes < 1) throw new RangeError('log limits must be positive');
    if (opts.maxKeptBytes !== undefined && !(opts.maxKeptBytes >= 1)) throw new RangeError('maxKeptBytes must be positive');
    this.maxUnackedChunks = opts.maxUnackedChunks ?? 1024;
  }

  /** Attach every stream before the first one can close (i.e. synchronously after spawn). */
  attach(stream: Readable, name: StreamName): void {
    this.open++;
    this.streams.push({ stream, name });
    stream.on('readable', () => this.take(stream, name));
    // A read error ends the stream; 'close' follows and is what we wait for.
    stream.on('error', () => {});
    stream.once('close', () => {
      if (--this.open === 0) this.resolveEnded();
      this.opts.onOutput?.();
    });
  }

  /** True when every stream has closed and every byte read has been handed out by `next()`. */
  get drained(): boolean {
    return this.open === 0 && this.pending.length === 0;
  }

  get inFlightBytes(): number {
    return this.pendingBytes + this.windowBytes;
  }

  stats(): LogPumpStats {
    return {
      inFlightBytes: this.inFlightBytes,
      peakInFlightBytes: this.peak,
      bytesRead: this.read,
      paused: this.isPaused,
      pauseCount: this.pauses,
      nextSeq: this.seq,
      ackedSeq: this.acked,
      droppedBytes: this.dropped,
    };
  }

  /** Whether next() would hand out a chunk now. */
  get hasNext(): boolean {
    return this.pending.length > 0 && this.window.length < this.maxUnackedChunks;
  }

  /** Seals and hands out the next chunk, or null when nothing is pending or the window is full. */
  next(): OutputChunk | null {
    if (this.window.length >= this.maxUnackedChunks) return null;
    const p = this.pending.shift();
    if (!p) return null;
    const data = p.bufs.length === 1 ? p.bufs[0]! : Buffer.concat(p.bufs, p.bytes);
    const chunk: OutputChunk = { seq: this.seq++, stream: p.stream, data };
    this.pendingBytes -= p.bytes;
    this.windowBytes += p.bytes;
    this.window.push(chunk);
    return chunk;
  }

  /** A handed-out, unacked chunk by seq (for re-sending), or undefined. */
  unackedChunk(seq: number): OutputChunk | undefined {
    const first = this.window[0];
    return first ? this.window[seq - first.seq] : undefined;
  }

  /** Cumulative: every chunk with seq <= `seq` is stored by the server. Stale or bogus acks are ignored. */
  ack(seq: number): void {
    if (!Number.isInteger(seq) || seq <= this.acked) return;
    const upTo = Math.min(seq, this.seq - 1);
    let n = 0;
    while (n < this.window.length && this.window[n]!.seq <= upTo) {
      this.windowBytes -= this.window[n]!.data.length;
      n++;
    }
    this.window.splice(0, n);
    this.acked = Math.max(this.acked, upTo);
    this.maybeResume();
  }

  /**
   * Stop keeping output: drop what is held and read the rest into the void.
   * For an attempt nobody will report on (rejected, stale, shutdown without a
   * server), so a full window cannot keep its process or the attempt alive.
   */
  discard(): void {
    this.discarding = true;
    this.pending.length = 0;
    this.window.length = 0;
    this.pendingBytes = 0;
    this.windowBytes = 0;
    this.isPaused = false;
    this.takeAll();
    this.opts.onOutput?.();
  }

  /** Close the pipes without waiting for EOF (a descendant outside the process group still holds them). */
  abandon(): void {
    for (const { stream } of this.streams) stream.destroy();
  }

  /** Takes what the stream has buffered, up to the room left in the window. */
  private take(stream: Readable, name: StreamName): void {
    if (this.discarding) {
      while (stream.read() !== null);
      return;
    }
    let tookAny = false;
    for (;;) {
      const room = this.opts.maxInFlightBytes - this.inFlightBytes;
      const avail = stream.readableLength;
      if (avail === 0) {
        // Lets the stream notice EOF (and emit 'end') or ask the pipe for more.
        const buf: Buffer | null = stream.read();
        if (!buf) break;
        // A stream that produced data synchronously: put it back and take it within the room below.
        stream.unshift(buf);
        continue;
      }
      if (room <= 0) {
        if (!this.isPaused) this.pauses++;
        this.isPaused = true;
        break;
      }
      const buf: Buffer | null = stream.read(Math.min(room, avail));
      if (!buf) break;
      this.add(name, buf);
      tookAny = true;
    }
    if (tookAny) this.opts.onOutput?.();
  }

  private takeAll(): void {
    for (const { stream, name } of this.streams) this.take(stream, name);
  }

  private add(stream: StreamName, buf: Buffer): void {
    this.read += buf.length;
    const limit = this.opts.maxKeptBytes ?? Infinity;
    if (this.kept + buf.length <= limit) {
      this.kept += buf.length;
      this.push(stream, buf);
      return;
    }
    // The first byte past the limit (in this read, or in one after a read that ended exactly on it): the marker, once.
    const keep = limit - this.kept;
    if (keep > 0) this.push(stream, buf.subarray(0, keep));
    if (this.dropped === 0) this.push('stderr', Buffer.from(cutMarker(limit)));
    this.kept = limit;
    this.dropped += buf.length - keep;
  }

  /** Queues `buf` as pending output: onto the last chunk when it is the same stream's and has room. */
  private push(stream: StreamName, buf: Buffer): void {
    const max = this.opts.maxChunkBytes;
    const last = this.pending[this.pending.length - 1];
    if (last && last.stream === stream && last.bytes + buf.length <= max) {
      last.bufs.push(buf);
      last.bytes += buf.length;
    } else {
      for (let off = 0; off < buf.length; off += max) {
        const part = buf.subarray(off, off + max);
        this.pending.push({ stream, bufs: [part], bytes: part.length });
      }
    }
    this.pendingBytes += buf.length;
    this.peak = Math.max(this.peak, this.inFlightBytes);
  }

  /** After an ack: read again once there is room for a reasonable chunk (not for every freed byte). */
  private maybeResume(): void {
    if (!this.isPaused) return;
    const room = this.opts.maxInFlightBytes - this.inFlightBytes;
    const enough = Math.min(this.opts.maxChunkBytes, Math.ceil(this.opts.maxInFlightBytes / 2));
    if (room >= enough || this.inFlightBytes === 0) {
      this.isPaused = false;
      this.takeAll();
    }
  }
}
