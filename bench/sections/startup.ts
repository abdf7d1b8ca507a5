/**
 * CLI start-up: wall time of `node -e 0`, `drover --version`, `drover ls`
 * and `drover show ID` against a real local server (SQLite, a few tasks),
 * N runs each, interleaved (one of each per round, so a change in the
 * machine's load hits all four alike), spawned directly (no shell). Reports
 * the medians and each one's ratio to `node -e 0` measured beside it.
 * Target (issue 10): `ls` and `show` at most 1.5 × `node -e 0`.
 */
import { spawn } from 'node:child_process';
import { BIN } from '../../test/e2e/harness.js';
import type { Ctx } from '../lib/context.js';
import { cluster, fill } from '../lib/drover.js';
import { met } from '../lib/report.js';
import { percentile } from '../lib/stats.js';

const TARGET = 1.5;

/** Wall ms from spawn to exit; rejects on a non-zero exit. */
function timeRun(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, argv, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${argv.join(' ')} exited ${code}: ${err}`))));
  });
}

export async function startup({ report, sizes }: Ctx): Promise<void> {
  // Runs of each command: 30, or 10 with --quick (lib/context.ts has no size of its own for this section).
  const n = sizes.spawnN >= 2000 ? 30 : 10;
  await report.part('CLI start-up', async () => {
    const c = await cluster({ workers: 0 }, 'Drover SQLite');
    try {
      const { ids } = await fill(c.api, 20);
      const env: NodeJS.ProcessEnv = { ...process.env, DROVER_URL: c.url, DROVER_TOKEN: c.api.token, NO_COLOR: '1' };
      const runs: Record<string, string[]> = {
        'node -e 0': ['-e', '0'],
        'drover --version': [BIN, '--version'],
        'drover ls': [BIN, 'ls'],
        'drover show ID': [BIN, 'show', ids[0]!],
      };
      const times: Record<string, number[]> = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
      for (const argv of Object.values(runs)) await timeRun(argv, env); // warm the page cache
      for (let i = 0; i < n; i++) for (const [k, argv] of Object.entries(runs)) times[k]!.push(await timeRun(argv, env));
      const median = (k: string) => percentile([...times[k]!].sort((a, b) => a - b), 50);
      const base = median('node -e 0');
      for (const k of Object.keys(runs)) {
        const m = median(k);
        const r = m / base;
        report.add({
          measure: `start-up: ${k}`,
          drover: `${m.toFixed(1)} ms median`,
          peer: k === 'node -e 0' ? '' : `node -e 0: ${base.toFixed(1)} ms`,
          ratio: k === 'node -e 0' ? '' : `${r.toFixed(2)}× node -e 0`,
          met: k === 'drover ls' || k === 'drover show ID' ? met(r <= TARGET, `≤ ${TARGET} × node -e 0`) : '',
          note: `${n} runs of each, interleaved, spawned without a shell, spawn to exit; against \`drover server\` on 127.0.0.1 (SQLite, 20 tasks), DROVER_URL/DROVER_TOKEN in the env.`,
        });
      }
    } finally {
      await c.close();
    }
  });
}
