/**
 * The long-running commands' heap trimming (src/cli/memory-trim.ts and its
 * addon, native/memory.c): when a trim follows a full GC, that the addon is
 * built wherever the spawner is and gives freed C heap back (RSS drops), and
 * that the running trimmer trims at start and after a full GC.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import { loadMemoryBinding, MIN_INTERVAL_MS, SETTLE_MS, startMemoryTrim, trimDelay } from '../../src/cli/memory-trim.js';
import { loadNativeSpawn } from '../../src/worker/native-spawn.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

function rssAnonKb(): number {
  return Number(/RssAnon:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
}

describe('memory trim: when', () => {
  it('the first full GC is trimmed after SETTLE_MS', () => {
    assert.equal(trimDelay(5_000, null), SETTLE_MS);
  });
  it('a full GC long after the last trim is trimmed after SETTLE_MS', () => {
    assert.equal(trimDelay(50_000, 50_000 - MIN_INTERVAL_MS), SETTLE_MS);
    assert.equal(trimDelay(90_000, 10_000), SETTLE_MS);
  });
  it('a full GC soon after a trim is trimmed later, MIN_INTERVAL_MS after that trim, not skipped', () => {
    assert.equal(trimDelay(12_000, 10_000), MIN_INTERVAL_MS - 2_000);
    assert.equal(trimDelay(10_000, 10_000), MIN_INTERVAL_MS);
  });
});

describe('memory trim: the addon', () => {
  it('is built wherever the native spawner is, and says it can release memory (glibc)', () => {
    const spawner = loadNativeSpawn();
    const b = loadMemoryBinding();
    if (!('binding' in spawner)) return assert.equal(b, null);
    assert.ok(b, 'drover_memory.node did not load where drover_spawn.node did');
    assert.equal(b.supported, true);
    assert.equal(typeof b.trim(), 'boolean');
  });

  it('gives freed C heap in the middle of an arena back: RssAnon drops by most of what was freed', () => {
    const b = loadMemoryBinding();
    if (!b) return assert.equal('binding' in loadNativeSpawn(), false);
    b.trim();
    // 8 KiB buffers are malloc'd one by one (below the mmap threshold); the last one,
    // kept, pins the arena's top so glibc's own top-trimming cannot give the rest back.
    let bufs: Buffer[] | null = Array.from({ length: 12_000 }, () => Buffer.alloc(8192, 1));
    const pin = Buffer.alloc(8192, 2);
    bufs = null;
    gc();
    gc();
    const before = rssAnonKb();
    assert.equal(b.trim(), true);
    const after = rssAnonKb();
    assert.ok(before - after >= 40_000, `RssAnon ${before} -> ${after} kB after freeing ~96 MB`);
    assert.equal(pin[0], 2);
  });
});

describe('memory trim: the trimmer', () => {
  it('trims STARTUP_MS after start, then after a full GC', async () => {
    let trims = 0;
    let onTrim: () => void = () => {};
    const binding = { supported: true, trim: () => { trims++; onTrim(); return true; } };
    let clock = 0;
    const next = () => new Promise<void>((resolve) => { onTrim = resolve; });
    const first = next();
    const handle = startMemoryTrim({ binding, now: () => clock, startupMs: 1 });
    assert.ok(handle);
    // The trimmer's timers are unref'd (they never hold a process open); this keeps the test's loop alive.
    const keep = setInterval(() => {}, 1_000);
    try {
      await first;
      assert.equal(trims, 1);
      clock += MIN_INTERVAL_MS;
      const second = next();
      gc();
      await second;
      assert.equal(trims, 2);
    } finally {
      clearInterval(keep);
      handle.stop();
    }
  });

  it('is off without the addon', () => {
    assert.equal(startMemoryTrim({ binding: null }), null);
  });
});
