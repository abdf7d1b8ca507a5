import assert from 'node:assert/strict';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { cutMarker, LogPump } from '../../src/worker/log-pump.js';

const PIPE_READ_BYTES = 64 * 1024;

/** Lets queued stream events ('data', 'close') run. */
const ticks = () => new Promise<void>((r) => setImmediate(r));

describe('log pump', () => {
  it('merges unpulled reads of one stream and splits big reads at maxChunkBytes', async () => {
    const pump = new LogPump({ maxChunkBytes: 8, maxInFlightBytes: 1 << 20 });
    const out = new PassThrough();
    const err = new PassThrough();
    pump.attach(out, 'stdout');
    pump.attach(err, 'stderr');
    out.write('ab');
    await ticks();
    out.write('cd');
    await ticks();
    err.write('E');
    await ticks();
    out.write('0123456789'); // larger than a chunk
    await ticks();
    const got = [];
    for (let c = pump.next(); c; c = pump.next()) got.push([c.seq, c.stream, c.data.toString()]);
    assert.deepEqual(got, [
      [0, 'stdout', 'abcd'],
      [1, 'stderr', 'E'],
      [2, 'stdout', '01234567'],
      [3, 'stdout', '89'],
    ]);
    assert.equal(pump.drained, false);
    out.end();
    err.end();
    await pump.ended;
    assert.equal(pump.drained, true);
  });

  it('keeps maxKeptBytes of output across both streams, cuts the read that crosses it, marks the cut once and drops the rest', async () => {
    const pump = new LogPump({ maxChunkBytes: 64, maxInFlightBytes: 1 << 20, maxKeptBytes: 10 });
    const out = new PassThrough();
    const err = new PassThrough();
    pump.attach(out, 'stdout');
    pump.attach(err, 'stderr');
    out.write('123456');
    await ticks();
    err.write('abcdef'); // crosses the limit: 'abcd' kept
    await ticks();
    out.write('x'.repeat(100_000)); // all dropped, and read: the writer is not held back
    await ticks();
    err.write('late');
    out.end();
    err.end();
    await pump.ended;
    const got: Record<string, string> = { stdout: '', stderr: '' };
    for (let c = pump.next(); c; c = pump.next()) got[c.stream] += c.data.toString();
    assert.deepEqual(got, { stdout: '123456', stderr: 'abcd' + cutMarker(10) });
    assert.match(cutMarker(10), /passed its log limit of 10 bytes; the rest was not kept/);
    assert.equal(pump.stats().droppedBytes, 2 + 100_000 + 4);
    assert.equal(pump.stats().bytesRead, 6 + 6 + 100_000 + 4);
    assert.equal(pump.drained, true);
  });

  it('a read that ends exactly on the limit keeps it all; the marker comes with the next byte', async () => {
    const pump = new LogPump({ maxChunkBytes: 1024, maxInFlightBytes: 1 << 20, maxKeptBytes: 4 });
    const out = new PassThrough();
    pump.attach(out, 'stdout');
    out.write('abcd');
    await ticks();
    out.end('e');
    await pump.ended;
    const got: Record<string, string> = { stdout: '', stderr: '' };
    for (let c = pump.next(); c; c = pump.next()) got[c.stream] += c.data.toString();
    assert.deepEqual(got, { stdout: 'abcd', stderr: cutMarker(4) });
    assert.equal(pump.stats().droppedBytes, 1);
  });

  it('output under maxKeptBytes, or exactly at it, is kept whole with no marker', async () => {
    const pump = new LogPump({ maxChunkBytes: 64, maxInFlightBytes: 1 << 20, maxKeptBytes: 8 });
    const out = new PassThrough();
    pump.attach(out, 'stdout');
    out.end('12345678');
    await pump.ended;
    assert.equal(pump.next()?.data.toString(), '12345678');
    assert.equal(pump.next(), null);
    assert.equal(pump.stats().droppedBytes, 0);
    assert.throws(() => new LogPump({ maxChunkBytes: 8, maxInFlightBytes: 8, maxKeptBytes: 0 }), /maxKeptBytes must be positive/);
  });

  it('keeps handed-out chunks until a cumulative ack, for re-sending', async () => {
    const pump = new LogPump({ maxChunkBytes: 4, maxInFlightBytes: 1 << 20 });
    const out = new PassThrough();
    pump.attach(out, 'stdout');
    out.write('aaaabbbbcccc');
    await ticks();
    assert.equal(pump.next()?.seq, 0);
    assert.equal(pump.next()?.seq, 1);
    assert.equal(pump.inFlightBytes, 12);
    pump.ack(0);
    assert.equal(pump.unackedChunk(0), undefined);
    assert.equal(pump.unackedChunk(1)?.data.toString(), 'bbbb');
    pump.ack(0); // stale: no effect
    pump.ack(99); // beyond what was handed out: clamped
    assert.equal(pump.stats().ackedSeq, 1);
    assert.equal(pump.inFlightBytes, 4);
    assert.equal(pump.next()?.data.toString(), 'cccc');
  });

  it('takes no more than the bound allows, waits for acks, and resumes on ack', async () => {
    const max = 100_000;
    const pump = new LogPump({ maxChunkBytes: 16_384, maxInFlightBytes: max });
    const out = new PassThrough({ highWaterMark: 16 });
    pump.attach(out, 'stdout');
    const block = Buffer.alloc(30_000, 120);
    for (let i = 0; i < 10; i++) out.write(block);
    out.end();
    await ticks();
    // The window is exactly full: the pump took what fit and left the rest in the stream.
    assert.equal(pump.stats().paused, true);
    assert.equal(pump.inFlightBytes, max);
    let last = -1;
    while (!pump.drained) {
      for (let c = pump.next(); c; c = pump.next()) last = c.seq;
      pump.ack(last);
      await ticks();
      assert.ok(pump.inFlightBytes <= max);
    }
    assert.equal(pump.stats().bytesRead, 300_000);
    assert.ok(pump.stats().peakInFlightBytes <= max);
    assert.ok(pump.stats().pauseCount >= 1);
  });

  it('discard drops held output and lets the stream run to its end', async () => {
    const pump = new LogPump({ maxChunkBytes: 64, maxInFlightBytes: 100 });
    const out = new PassThrough();
    pump.attach(out, 'stdout');
    out.write(Buffer.alloc(1000));
    await ticks();
    assert.equal(pump.stats().paused, true);
    pump.discard();
    out.end(Buffer.alloc(PIPE_READ_BYTES * 4));
    await once(out, 'close');
    await pump.ended;
    assert.equal(pump.inFlightBytes, 0);
    assert.equal(pump.next(), null);
    assert.equal(pump.drained, true);
  });
});
