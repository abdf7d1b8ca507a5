/**
 * Worker thread for the cross-connection claim race in sqlite.test.ts: opens
 * its own connection to the shared file, waits for "go", then claims (and
 * ends) tasks until none is waiting, and posts the ids it claimed. Opens
 * without `lock` on purpose: several connections to one file is what it tests. Does
 * nothing when loaded on the main thread (e.g. picked up by the test runner).
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';

interface RaceData {
  path: string;
  workerId: string;
  now: number;
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  const { path, workerId, now } = workerData as RaceData;
  const store = openSqliteStore(path);
  port.once('message', () => {
    void (async () => {
      const claimed: string[] = [];
      try {
        for (;;) {
          const c = await store.claimNext({ id: workerId, labels: {} }, now, 15_000);
          if (!c) break;
          claimed.push(c.task.id);
          await store.endAttempt(c.attempt.id, c.attempt.fencingToken, { outcome: 'succeeded', exitCode: 0, signal: null, error: null, durationMs: 1 }, workerId, now + 1, { workerId });
          // Let the event loop turn, as a server would between claims; gives other threads a chance at the lock.
          await new Promise((resolve) => setImmediate(resolve));
        }
        port.postMessage({ claimed });
      } catch (e) {
        port.postMessage({ error: String(e) });
      } finally {
        await store.close();
      }
    })();
  });
  port.postMessage('ready');
}
