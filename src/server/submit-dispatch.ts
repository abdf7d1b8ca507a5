/**
 * One task submitted now (POST /v1/tasks, a rerun): stored, and claimed in the
 * same write for a free slot of a connected worker when no other task is
 * waiting (store/tasks.ts CreateOptions.claimFor), its assignment sent before
 * the caller replies. Otherwise the store's `wake` dispatches it as usual.
 * The slot is reserved (Scheduler.reserveForSubmit) for the whole write, so
 * no dispatch pass hands it to another task meanwhile; if it goes unused, a
 * pass is asked for, since one that ran meanwhile did not see it.
 * Measured (issue 9, PostgreSQL, 200 submits on a 20 ms grid to an idle
 * 10-slot worker): submit → process started p50 8.0 → 5.7 ms, p99 20.9 →
 * 10.6 ms, one commit instead of the submit's and then the claim's.
 */
import type { TaskSpec } from '../core/task.js';
import type { Store } from '../store/store.js';
import type { CreateOptions, CreateResult, Idempotency } from '../store/tasks.js';
import type { Scheduler } from './scheduler.js';

export async function createAndDispatch(
  store: Store,
  scheduler: Scheduler,
  t: { id: string; owner: string; spec: TaskSpec; actor: string; now: number; idem?: Idempotency | undefined; opts?: Omit<CreateOptions, 'claimFor'> },
): Promise<CreateResult> {
  const opts = t.opts ?? {};
  const slot = (opts.runAfter ?? null) === null ? scheduler.reserveForSubmit(t.spec.requires) : null;
  let res: CreateResult | undefined;
  try {
    res = await store.createTask(t.id, t.owner, t.spec, t.actor, t.now, t.idem, { ...opts, claimFor: slot && { worker: slot.worker, leaseMs: slot.leaseMs } });
    // Before the reply: writing it (serialization, the socket write) took 0.65 ms at p50, which the start waited for.
    if (res.claim && !slot!.link.assign(res.claim.task, res.claim.attempt)) await scheduler.giveBack([res.claim.attempt]);
    return res;
  } finally {
    if (slot) {
      slot.release();
      if (!res?.claim) scheduler.kick();
    }
  }
}
