/**
 * Submit rates from ONE client, on keep-alive HTTP for Drover.
 *  - sequential: each submit awaited before the next (POST /v1/tasks; the 201
 *    means the task is committed: SQLite synchronous=FULL, PostgreSQL
 *    synchronous_commit=on). Span: first request sent → last answer received,
 *    after sizes.warmUp untimed submits on the same server (the peers the
 *    same number of adds on the same queue; context.ts says why). Peers:
 *    graphile-worker addJob, BullMQ Queue.add, and the raw better-sqlite3
 *    insert+commit loop (the SQLite ceiling).
 *  - batch: POST /v1/tasks/batch with 1,000 tasks a request, requests
 *    sequential, vs graphile-worker addJobs and BullMQ addBulk with the same
 *    sizes. Fails clearly when the server answers 404 (no batch endpoint).
 */
import { BULLMQ_CONFIG, bullmqAddBulk, bullmqAddSequential, redisDurability } from '../peers/bullmq.js';
import { graphileAddBulk, graphileAddSequential } from '../peers/graphile.js';
import { RAW_SQLITE_CONFIG, rawSqliteInserts } from '../peers/raw-sqlite.js';
import type { Ctx } from '../lib/context.js';
import { BATCH_MAX, cluster, submitBatch, type Api } from '../lib/drover.js';
import { withDatabase } from '../lib/pg.js';
import { met, ratio } from '../lib/report.js';
import { afterWarmUp, chunks, fmtRate, type WarmedSpan } from '../lib/stats.js';

const SPEC = { command: 'true' };

/** Runs `fn(api)` on a fresh server with no worker (SQLite, or PostgreSQL in a fresh database). */
async function onServer<T>(store: 'SQLite' | 'PostgreSQL', fn: (api: Api) => Promise<T>): Promise<T> {
  const go = async (db?: string) => {
    const c = await cluster({ workers: 0, ...(db ? { db } : {}) }, `Drover ${store}`);
    try {
      return await fn(c.api);
    } finally {
      await c.close();
    }
  };
  return store === 'SQLite' ? go() : withDatabase('submit', go);
}

/** n awaited submits after `warm` untimed ones; s: the timed span, warmS: the warm-up's (a fresh server's first submits). */
function sequential(api: Api, n: number, warm: number): Promise<WarmedSpan> {
  const submits = async (k: number) => {
    for (let i = 0; i < k; i++) await api.submit(SPEC);
  };
  return afterWarmUp(() => submits(warm), () => submits(n));
}

/** The warm-up rates, for the notes: how fast each side ran while it warmed up. */
function warmNote(warm: number, sides: Array<[string, WarmedSpan]>): string {
  return `Warm-up (${warm.toLocaleString('en-US')} untimed before the span, same server / queue): ${sides.map(([who, r]) => `${who} ${fmtRate(warm, r.warmS)}`).join(', ')}`;
}

/**
 * n tasks in batches of BATCH_MAX after `warm` untimed ones (same batches); the 404 check comes first.
 * `minimal`: each batch asks for the short answer (Prefer: return=minimal).
 */
async function batches(api: Api, n: number, warm: number, minimal = false): Promise<WarmedSpan> {
  await submitBatch(api, 10, SPEC); // the 404 check before any clock starts
  const inBatches = async (total: number) => {
    for (const k of chunks(total, BATCH_MAX)) await submitBatch(api, k, SPEC, minimal);
  };
  return afterWarmUp(() => inBatches(warm), () => inBatches(n));
}

export async function submit({ report, sizes }: Ctx): Promise<void> {
  const n = sizes.submitN;
  const warm = sizes.warmUp;
  const seqWhat = `${n.toLocaleString('en-US')} sequential awaited single submits, one client`;
  const seqSpan = `span: first request sent → last answer received (each awaited before the next; ${warm.toLocaleString('en-US')} warm-up submits before, untimed; the peers as many adds)`;
  const redis = await redisDurability();

  await report.part(`${seqWhat}, SQLite`, async () => {
    const dr = await onServer('SQLite', (api) => sequential(api, n, warm));
    const d = dr.s;
    const raw = await rawSqliteInserts(n, warm);
    const b = await bullmqAddSequential(n, warm);
    report.add({
      measure: `${seqWhat}: SQLite vs raw better-sqlite3 insert+commit (ceiling)`,
      drover: fmtRate(n, d),
      peer: fmtRate(n, raw.s),
      ratio: ratio(raw.s / d),
      met: 'ceiling: ratio reported',
      note: `${seqSpan}. Drover: POST /v1/tasks {command: "true"} over keep-alive node:http to \`drover server --db sqlite:…\`. Peer: ${RAW_SQLITE_CONFIG}, in the bench process. ${warmNote(warm, [['Drover', dr], ['raw', raw]])}.`,
    });
    report.add({
      measure: `${seqWhat}: SQLite vs BullMQ Queue.add`,
      drover: fmtRate(n, d),
      peer: fmtRate(n, b.s),
      ratio: ratio(b.s / d),
      met: 'no target (for reference)',
      note: `${seqSpan}. Drover as the row above. Peer: ${BULLMQ_CONFIG}, await queue.add() in a loop; ${redis} (an acknowledged add is not yet on disk, unlike Drover's). ${warmNote(warm, [['Drover', dr], ['BullMQ', b]])}.`,
    });
  });

  await report.part(`${seqWhat}, PostgreSQL`, async () => {
    const dr = await onServer('PostgreSQL', (api) => sequential(api, n, warm));
    const d = dr.s;
    const g = await withDatabase('gwadd', (url) => graphileAddSequential(url, n, warm));
    report.add({
      measure: `${seqWhat}: PostgreSQL vs graphile-worker addJob`,
      drover: fmtRate(n, d),
      peer: fmtRate(n, g.s),
      ratio: ratio(g.s / d),
      met: met(g.s / d >= 1, 'Drover ≥ graphile-worker addJob'),
      note: `${seqSpan}. Drover: POST /v1/tasks to \`drover server --db postgres://…\` (fresh database). Peer: graphile-worker 0.17 makeWorkerUtils({ connectionString }).addJob() awaited in a loop, fresh database, same server. ${warmNote(warm, [['Drover', dr], ['graphile-worker', g]])}.`,
    });
  });

  const bn = sizes.batchN;
  const batchWhat = `${bn.toLocaleString('en-US')} tasks in batches of ${BATCH_MAX.toLocaleString('en-US')}, one client`;
  const batchSpan = `span: first batch sent → last batch answered (batches sequential, each awaited; ${warm.toLocaleString('en-US')} tasks in the same batches before, untimed; the peers as many jobs)`;
  await report.part(`${batchWhat} (POST /v1/tasks/batch)`, async () => {
    const sr = await onServer('SQLite', (api) => batches(api, bn, warm));
    const pr = await onServer('PostgreSQL', (api) => batches(api, bn, warm));
    const srMin = await onServer('SQLite', (api) => batches(api, bn, warm, true));
    const prMin = await onServer('PostgreSQL', (api) => batches(api, bn, warm, true));
    const s = sr.s; // the BullMQ row below compares the whole-answer SQLite run
    const g = await withDatabase('gwbulk', (url) => graphileAddBulk(url, bn, BATCH_MAX, warm));
    const b = await bullmqAddBulk(bn, BATCH_MAX, warm);
    const drover = `POST /v1/tasks/batch {tasks: [${BATCH_MAX} × {command: "true"}]}`;
    const sides = [
      ['SQLite', '', sr],
      ['PostgreSQL', '', pr],
      ['SQLite', ' (Prefer: return=minimal)', srMin],
      ['PostgreSQL', ' (Prefer: return=minimal)', prMin],
    ] as const;
    for (const [store, how, r] of sides) {
      const d = r.s;
      const answer = how
        ? `, with the header \`Prefer: return=minimal\`: each task answered as {id, state} (about 50 bytes) instead of the whole task (about 600), what a client that keeps only the ids asks for (the CLI's \`submit --from-file\` without --json). graphile-worker's addJobs returns its whole job rows`
        : ', answered with the whole tasks';
      report.add({
        measure: `${batchWhat}: ${store}${how} vs graphile-worker addJobs`,
        drover: fmtRate(bn, d),
        peer: fmtRate(bn, g.s),
        ratio: ratio(g.s / d),
        met: met(g.s / d >= 1, 'Drover ≥ graphile-worker addJobs'),
        note: `${batchSpan}. Drover: ${drover} to \`drover server --db ${store === 'SQLite' ? 'sqlite:…' : 'postgres://…'}\`${answer}; a fresh server. Peer: graphile-worker 0.17 WorkerUtils.addJobs(${BATCH_MAX} jobs) per call, fresh database. ${warmNote(warm, [['Drover', r], ['graphile-worker', g]])}.`,
      });
    }
    report.add({
      measure: `${batchWhat}: SQLite vs BullMQ addBulk`,
      drover: fmtRate(bn, s),
      peer: fmtRate(bn, b.s),
      ratio: ratio(b.s / s),
      met: 'no target (for reference)',
      note: `${batchSpan}. Drover as above. Peer: ${BULLMQ_CONFIG}, Queue.addBulk(${BATCH_MAX} jobs) per call; ${redis}. ${warmNote(warm, [['Drover', sr], ['BullMQ', b]])}.`,
    });
  });
}
