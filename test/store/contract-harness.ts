/**
 * What every store contract file shares: a fresh migrated store per test and
 * helpers that act as the callers do (a user submits, a worker claims and
 * reports with its attempt's token, the sweeper ends expired leases).
 *
 * Clocks. Lease arithmetic uses the caller's `now` on SQLite and the
 * database's clock on PostgreSQL (StoreCapabilities.leaseClock), so a test
 * makes a lease expire only by claiming or renewing with a negative lease
 * (EXPIRED), never by moving `now`; exact lease values are checked only where
 * the store uses the caller's clock. Every other time is the `now` passed in.
 * Nothing here sleeps or reads the wall clock.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, it } from 'node:test';
import { newTaskId } from '../../src/core/ids.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../../src/core/retry-policy.js';
import type { Task, TaskSpec } from '../../src/core/task.js';
import type { AttemptEndResult, AttemptOutcome, Claim, EndGuard, Idempotency, NewLogChunk, Store } from '../../src/store/store.js';

export const T0 = 1_700_000_000_000;
export const LEASE = 15_000;
/** A lease that ends before it starts: expired at once on any store clock. */
export const EXPIRED = -1_000;

export function makeSpec(o: Partial<TaskSpec> = {}): TaskSpec {
  return {
    name: 'echo',
    kind: 'batch',
    command: 'echo',
    args: ['hello', 'world'],
    script: null,
    interpreter: [],
    env: {},
    timeoutMs: null,
    retry: { ...DEFAULT_RETRY_POLICY },
    priority: 0,
    labels: {},
    requires: {},
    cwd: null,
    ...o,
  };
}

export interface SubmitOptions {
  name?: string;
  owner?: string;
  priority?: number;
  retry?: Partial<RetryPolicy>;
  requires?: Record<string, string>;
  now?: number;
  idem?: Idempotency;
}

export interface ClaimOptions {
  labels?: Record<string, string>;
  leaseMs?: number;
}

export type Opened = () => Promise<Store>;

/** What a backend's test file adds to the shared contract. */
export interface ContractHooks {
  /**
   * Resolves once every change committed before the call is readable from the
   * feed. PostgreSQL: the feed shows a change only when no older transaction
   * is still running anywhere in the cluster (store/feed.ts), and other test
   * processes share the cluster, so a test waits for that horizon (polling,
   * with a deadline). SQLite: at once.
   */
  settled?: (store: Store) => Promise<void>;
  /**
   * Opens a second, migrated store on the same database as `store` (another
   * server's handle: its own pool), for races between servers. Absent for
   * SQLite: one server owns a database file (sqlite/server-lock.ts), so
   * there are no two servers to race; see raceBetweenServers.
   */
  sibling?: (store: Store) => Promise<Store>;
}

/**
 * Registers a race between two servers' store handles where the backend can
 * have two servers on one database (hooks.sibling: PostgreSQL), and nothing
 * elsewhere: such a race cannot happen on SQLite, so it is not a skipped
 * test there but no test at all.
 */
export function raceBetweenServers(hooks: ContractHooks, name: string, fn: (sibling: NonNullable<ContractHooks['sibling']>) => Promise<void>): void {
  const sibling = hooks.sibling;
  if (sibling) it(name, () => fn(sibling));
}

/** The outcome fields of an end, as a worker (or for `lost`, the sweeper) reports them. */
export function endInput(outcome: AttemptOutcome) {
  return {
    outcome,
    exitCode: outcome === 'succeeded' ? 0 : outcome === 'failed' ? 1 : null,
    signal: outcome === 'timed_out' || outcome === 'cancelled' ? 'SIGTERM' : null,
    error: outcome === 'lost' ? 'lease expired' : null,
    durationMs: outcome === 'lost' ? null : 25,
  };
}

export class Harness {
  /** Set before each test (a fresh migrated store), closed after it. */
  store!: Store;
  private hooks: ContractHooks = {};

  /** Registers the per-test lifecycle in the enclosing describe. */
  static use(open: Opened, hooks: ContractHooks = {}): Harness {
    const h = new Harness();
    h.hooks = hooks;
    beforeEach(async () => {
      h.store = await open();
      await h.store.migrate();
    });
    afterEach(async () => {
      await h.store.close();
    });
    return h;
  }

  /** See ContractHooks.settled. */
  async settled(): Promise<void> {
    await this.hooks.settled?.(this.store);
  }

  /** The leases of this store use the `now` the caller passes (exact values can be asserted). */
  get callerClock(): boolean {
    return this.store.capabilities.leaseClock === 'caller';
  }

  async submit(o: SubmitOptions = {}): Promise<Task> {
    const now = o.now ?? T0;
    const spec = makeSpec({
      name: o.name ?? 'echo',
      priority: o.priority ?? 0,
      retry: { ...DEFAULT_RETRY_POLICY, ...o.retry },
      requires: o.requires ?? {},
    });
    const r = await this.store.createTask(newTaskId(now), o.owner ?? 'alice', spec, 'user:alice', now, o.idem);
    assert.equal(r.created, true);
    return r.task;
  }

  async claim(now = T0, worker = 'w1', o: ClaimOptions = {}): Promise<Claim> {
    const c = await this.store.claimNext({ id: worker, labels: o.labels ?? {} }, now, o.leaseMs ?? LEASE);
    assert.ok(c, 'expected a waiting task to claim');
    return c;
  }

  /**
   * Ends `c` as its worker reports it (its token, its worker id), or for
   * `lost` as the server does on its own (its token, no worker guard).
   */
  end(c: Claim, outcome: AttemptOutcome, now: number, guard?: EndGuard): Promise<AttemptEndResult | null> {
    const g = guard ?? (outcome === 'lost' ? {} : { workerId: c.attempt.workerId });
    const actor = outcome === 'lost' ? 'scheduler' : `worker:${c.attempt.workerId}`;
    return this.store.endAttempt(c.attempt.id, c.attempt.fencingToken, endInput(outcome), actor, now, g);
  }

  /** The lease sweeper's end: lost, guarded by the expiry. */
  sweep(c: Claim, now: number): Promise<AttemptEndResult | null> {
    return this.store.endAttempt(c.attempt.id, c.attempt.fencingToken, endInput('lost'), 'scheduler', now, { leaseExpired: true });
  }

  /** Log chunks from the attempt's own worker with its token. */
  log(c: Claim, chunks: NewLogChunk[], now: number): Promise<boolean> {
    return this.store.appendLogs(c.attempt.id, c.attempt.fencingToken, c.attempt.workerId, chunks, now);
  }

  check(c: Claim) {
    return this.store.checkReport(c.attempt.id, c.attempt.fencingToken, c.attempt.workerId);
  }

  /** Everything a fenced call must leave unchanged. */
  async snapshot(taskId: string) {
    return {
      task: await this.store.getTask(taskId),
      attempts: await this.store.listAttempts(taskId),
      events: await this.store.listEvents(taskId),
      logs: await this.store.readLogs(taskId, 0, 1000),
    };
  }
}

export const chunk = (seq: number, text: string, stream: 'stdout' | 'stderr' = 'stdout'): NewLogChunk => ({ seq, stream, data: Buffer.from(text) });

/** A well-formed fencing token that no attempt holds (32 hex, like a real one). */
export const GUESSED_TOKEN = '0123456789abcdef0123456789abcdef';
