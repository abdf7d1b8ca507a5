/**
 * The long-running commands cap V8's young generation (src/cli/heap-flags.ts):
 * after a few thousand tasks through a real server and a real noop agent,
 * both processes' new space is still at most two semi-spaces of
 * MAX_SEMI_SPACE_BYTES (plus the one doubling the cap's observer can miss).
 * Without the cap, the same load grows the server's to 32 MB and the agent's
 * to 16 MB (checked by running this file with DROVER_BIN pointing at a build
 * without it).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { MAX_SEMI_SPACE_BYTES } from '../../src/cli/heap-flags.js';
import { startCluster, type Cluster } from './harness.js';

const REPORT = fileURLToPath(new URL('./heap-report.js', import.meta.url));
const TASKS = 3000;

async function newSpaceBytes(dir: string, pid: number): Promise<number> {
  const path = join(dir, `${pid}.json`);
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 10_000;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} wrote no heap report`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return JSON.parse(readFileSync(path, 'utf8')).spaces.new_space as number;
}

describe('e2e: the young generation of the server and the agent stays capped under load', () => {
  let c: Cluster;
  let reports: string;
  const saved = process.env.NODE_OPTIONS;
  before(async () => {
    reports = mkdtempSync(join(tmpdir(), 'drover-heap-'));
    process.env.NODE_OPTIONS = `${saved ?? ''} --import ${REPORT}`.trim();
    process.env.DROVER_HEAP_REPORT_DIR = reports;
    c = await startCluster({ workers: 0 });
    await c.startWorker({ slots: 10, extra: ['--executor', 'noop'] });
  });
  after(async () => {
    if (saved === undefined) delete process.env.NODE_OPTIONS;
    else process.env.NODE_OPTIONS = saved;
    delete process.env.DROVER_HEAP_REPORT_DIR;
    await c?.close();
    rmSync(reports, { recursive: true, force: true });
  });

  it(`after ${TASKS} tasks`, async () => {
    let submitted = 0;
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (submitted < TASKS) {
          submitted++;
          ids.push(await c.api.submit({ command: 'true' }));
        }
      }),
    );
    await c.api.waitState(ids[ids.length - 1]!, ['succeeded']);
    for (;;) {
      const r = await c.api.req('GET', '/v1/stats/counts');
      if ((r.body?.counts?.succeeded ?? 0) >= TASKS) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const limit = 2 * 2 * MAX_SEMI_SPACE_BYTES;
    const server = await newSpaceBytes(reports, c.server.child.pid!);
    const agent = await newSpaceBytes(reports, c.workers[0]!.child.pid!);
    console.log(`new space after ${TASKS} tasks: server ${server} B, agent ${agent} B (limit ${limit} B)`);
    assert.ok(server <= limit, `server new space ${server} > ${limit}`);
    assert.ok(agent <= limit, `agent new space ${agent} > ${limit}`);
  });
});
