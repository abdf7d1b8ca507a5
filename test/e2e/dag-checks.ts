/**
 * What the DAG durability tests run and check (issue 12: "a DAG run's progress
 * survives a server restart and a failover ... and no step is released
 * twice"), read through the API of whichever server is up:
 *
 * - the run ended `succeeded`, every step `succeeded`, none skipped;
 * - every step has exactly one `released` event (a root's is written by the
 *   run's start), and it is no earlier than the end of each of its
 *   dependencies (the release is written in the transaction that ended the
 *   last of them, so with the store's ms clock it may be equal, never earlier);
 * - a step with more than one attempt lost the earlier ones (worker_lost:
 *   requeued without a retry), never failed them;
 * - the ledger (each step's process appends "$DROVER_TASK_ID $DROVER_ATTEMPT")
 *   shows every step ran, no (task, attempt) ran twice, and no step ran more
 *   often than the server recorded attempts.
 *
 * Requests go on fresh connections with a timeout (a pooled socket to a
 * killed server would fail for the wrong reason). No side effects at import:
 * node --test loads every file under test/.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Api } from './harness.js';

export interface Reply {
  status: number;
  body: any;
  text: string;
}

/** One request on a connection of its own (the servers of these tests get killed), failing after `timeoutMs`. */
export function send(api: Api, method: string, path: string, body?: unknown, timeoutMs = 10_000): Promise<Reply> {
  return api.req(method, path, body, api.token, { fresh: true, timeoutMs });
}

/** `send`, expecting `status`; throws with the answer otherwise. */
export async function expectStatus(api: Api, method: string, path: string, status: number, body?: unknown): Promise<any> {
  const r = await send(api, method, path, body);
  if (r.status !== status) throw new Error(`${method} ${path}: ${r.status} ${r.text.slice(0, 500)}`);
  return r.body;
}

/**
 * Calls `fn` every `everyMs` until it returns a value other than
 * undefined/null/false; a throw counts as "not yet" (a server may be down on
 * purpose). Fails after `timeoutMs` with `what` and the last error.
 */
export async function poll<T>(what: string | (() => string), fn: () => Promise<T | undefined | null | false>, timeoutMs: number, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = null;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== null && v !== false) return v;
      last = null;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface RunView {
  run: { id: string; state: string; endedAt: string | null };
  steps: Array<{ name: string; dependsOn: string[]; taskId: string; state: string; attempts: number }>;
}

export const readRun = (api: Api, runId: string): Promise<RunView> => expectStatus(api, 'GET', `/v1/dag-runs/${runId}`, 200);

/** Polls the run (through `api()`, which may change as servers die) until it is no longer running. */
export async function runEnded(api: () => Api, runId: string, timeoutMs: number): Promise<RunView> {
  let last: RunView | null = null;
  return poll(
    () => `run ${runId} to end (last seen: ${last ? JSON.stringify(last.steps.map((s) => `${s.name}:${s.state}`)) : 'nothing'})`,
    async () => {
      last = await readRun(api(), runId);
      return last.run.state !== 'running' ? last : null;
    },
    timeoutMs,
  );
}

export interface StepHistory {
  step: string;
  dependsOn: string[];
  taskId: string;
  state: string;
  attempts: Array<{ number: number; state: string; workerId: string; startedAt: string; endedAt: string | null; error: string | null }>;
  events: Array<{ from: string; to: string; reason: string; at: string; actor: string }>;
}

export async function histories(api: Api, view: RunView): Promise<StepHistory[]> {
  return Promise.all(
    view.steps.map(async (s) => {
      const d = await expectStatus(api, 'GET', `/v1/tasks/${s.taskId}`, 200);
      return { step: s.name, dependsOn: s.dependsOn, taskId: s.taskId, state: d.task.state, attempts: d.attempts, events: d.events };
    }),
  );
}

/** Ledger lines "<task id> <attempt>" by task id. */
export function readLedger(file: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n').filter(Boolean)) {
    const [id, n] = line.split(' ');
    if (!id || !n || !/^\d+$/.test(n)) throw new Error(`malformed ledger line ${JSON.stringify(line)}`);
    out.set(id, [...(out.get(id) ?? []), Number(n)]);
  }
  return out;
}

/** When a step's task ended `succeeded` (its event), epoch ms; NaN if it did not. */
function succeededAt(h: StepHistory): number {
  const e = h.events.find((x) => x.to === 'succeeded');
  return e ? Date.parse(e.at) : NaN;
}

/** Every violation of the header's rules, as readable lines (empty: the run is sound). */
export function durabilityProblems(view: RunView, hs: StepHistory[], ledger: Map<string, number[]>): string[] {
  const bad: string[] = [];
  if (view.run.state !== 'succeeded') bad.push(`run ${view.run.id} is ${view.run.state}`);
  const byStep = new Map(hs.map((h) => [h.step, h]));
  for (const h of hs) {
    const at = `step ${h.step} (${h.taskId})`;
    if (h.state !== 'succeeded') bad.push(`${at}: ${h.state}`);
    if (h.events.some((e) => e.to === 'skipped')) bad.push(`${at}: was skipped`);
    const released = h.events.filter((e) => e.reason === 'released');
    if (released.length !== 1) bad.push(`${at}: ${released.length} released events`);
    for (const dep of h.dependsOn) {
      const d = byStep.get(dep);
      const depEnd = d ? succeededAt(d) : NaN;
      if (released[0] && !(Date.parse(released[0].at) >= depEnd)) bad.push(`${at}: released at ${released[0].at}, before ${dep} succeeded (${d ? new Date(depEnd).toISOString() : 'no such step'})`);
    }
    const earlier = h.attempts.slice(0, -1).filter((a) => a.state !== 'lost');
    if (earlier.length) bad.push(`${at}: earlier attempts not lost: ${JSON.stringify(earlier)}`);
    if (h.attempts.at(-1)?.state !== 'succeeded') bad.push(`${at}: last attempt ${JSON.stringify(h.attempts.at(-1))}`);
    const ran = ledger.get(h.taskId) ?? [];
    if (ran.length === 0) bad.push(`${at}: not in the ledger`);
    if (new Set(ran).size !== ran.length) bad.push(`${at}: attempt numbers ran twice: ${ran.join(',')}`);
    if (ran.length > h.attempts.length) bad.push(`${at}: ran ${ran.length} times, ${h.attempts.length} attempts recorded`);
  }
  return bad;
}

/** A step's shell command: append to the ledger, then `then`. */
export function ledgerCommand(ledger: string, then: string): { command: string; args: string[] } {
  return { command: 'sh', args: ['-c', `echo "$DROVER_TASK_ID $DROVER_ATTEMPT" >> ${ledger}${then ? `; ${then}` : ''}`] };
}

/** Shell: wait until `file` exists, 60 s at most (a failed case must not leave a step waiting forever). */
export function waitFileSh(file: string): string {
  return `n=0; while [ ! -e ${file} ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done`;
}

/**
 * start → b0..b(width-1) → join → tail. Each step appends to the ledger; each
 * branch then waits for its gate, the file `<gateDir>/gate.<run id>.<step>`
 * (openGates), so a test holds every branch running and lets them end
 * together or one by one.
 */
export function gatedFanIn(name: string, ledger: string, gateDir: string, width: number) {
  const branches = Array.from({ length: width }, (_, i) => `b${i}`);
  return {
    name,
    steps: [
      { name: 'start', ...ledgerCommand(ledger, '') },
      ...branches.map((b) => ({ name: b, depends_on: ['start'], ...ledgerCommand(ledger, waitFileSh(`${gateDir}/gate.$DROVER_DAG_RUN.$DROVER_DAG_STEP`)) })),
      { name: 'join', depends_on: branches, ...ledgerCommand(ledger, '') },
      { name: 'tail', depends_on: ['join'], ...ledgerCommand(ledger, 'sleep 0.1') },
    ],
  };
}

/** Lets the branches `steps` of run `runId` of gatedFanIn end. */
export function openGates(gateDir: string, runId: string, steps: readonly string[]): void {
  for (const step of steps) writeFileSync(join(gateDir, `gate.${runId}.${step}`), '');
}
