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
 * - In-flight bytes = read but not acked (pending + unacked). The pump stops
 *   reading both pipes *before* in-flight could pass `maxInFlightBytes`; the
 *   child then blocks in write(2), which is the intended backpressure. Reading
 *   resumes when acks make room again. One pipe read is at most 64 KiB
 *   (libuv's read size), so in-flight never exceeds
 *   max(maxInFlightBytes, 64 KiB), however much the child prints.
 * - The unacked window is also capped in chunks (`maxUnackedChunks`): each
 *   chunk costs a message and some bookkeeping beyond its bytes.
 * Everything runs per pipe read (one 'data' event at a time), never in a
 * loop over a big buffer, so the event loop stays free for heartbeats.
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
}

/** Largest single read from a pipe (libuv allocates 64 KiB per read). */
export const PIPE_READ_BYTES = 64 * 1024;

interface Pending {
  stream: StreamName;
  bufs: Buffer[];
  bytes: number;
}

export class LogPump {
  private readonly streams: Readable[] = [];
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
  private readonly maxUnackedChunks: number;
  private resolveEnded!: () => void;
  /** Resolves when every attached stream has closed (EOF, error or destroy). */
  readonly ended: Promise<void> = new Promise((r) => (this.resolveEnded = r));

  constructor(private readonly opts: LogPumpOptions) {
    if (opts.maxChunkBytes < 1 || opts.maxInFlightBytes < 1) throw new RangeError('log limits must be positive');
    this.maxUnackedChunks = opts.maxUnackedChunks ?? 1024;
  }

  /** Attach every stream before the first one can close (i.e. synchronously after spawn). */
  attach(stream: Readable, name: StreamName): void {
    this.open++;
    this.streams.push(stream);
    stream.on('data', (buf: Buffer) => this.onData(name, buf));
    // A read error ends the stream; 'close' follows and is what we wait for.
    stream.on('error', () => {});
    stream.once('close', () => {
      if (--this.open === 0) this.resolveEnded();
      this.opts.onOutput?.();
    });
    if (this.isPaused) stream.pause();
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
    };
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
   * server), so a paused pipe cannot keep its process or the attempt alive.
   */
  discard(): void {
    this.discarding = true;
    this.pending.length = 0;
    this.window.length = 0;
    this.pendingBytes = 0;
    this.windowBytes = 0;
    this.setPaused(false);
    this.opts.onOutput?.();
  }

  /** Close the pipes without waiting for EOF (a descendant outside the process group still holds them). */
  abandon(): void {
    for (const s of this.streams) s.destroy();
  }

  private onData(stream: StreamName, buf: Buffer): void {
    if (this.discarding) return;
    this.read += buf.length;
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
    if (this.mustPause()) this.setPaused(true);
    this.opts.onOutput?.();
  }

  /** Pause while one more pipe read could push in-flight past the bound (but never with nothing in flight). */
  private mustPause(): boolean {
    const inFlight = this.inFlightBytes;
    return inFlight > 0 && inFlight + PIPE_READ_BYTES > this.opts.maxInFlightBytes;
  }

  private maybeResume(): void {
    if (this.isPaused && !this.mustPause()) this.setPaused(false);
  }

  private setPaused(paused: boolean): void {
    if (paused === this.isPaused) return;
    this.isPaused = paused;
    if (paused) this.pauses++;
    for (const s of this.streams) {
      if (paused) s.pause();
      else s.resume();
    }
  }
}
