/** What route handlers share: built once in main.ts, passed down as plain values. */
import type { Clock } from '../core/clock.js';
import type { Store } from '../store/store.js';
import type { Tokens } from './auth.js';
import type { Logger, Scheduler } from './scheduler.js';
import type { SessionRegistry } from './session-registry.js';
import type { TaskBus } from './task-bus.js';

export interface AppContext {
  store: Store;
  scheduler: Scheduler;
  bus: TaskBus;
  clock: Clock;
  tokens: Tokens;
  log: Logger;
  /** Open connections by token, closed when the token is revoked (session-registry.ts). */
  sessions: SessionRegistry;
  /**
   * Tells the cron service (cron-service.ts) that a schedule's next fire time may be
   * earlier than its timer: called after a schedule is created, resumed or run by hand.
   * Absent (tests, or no cron service): the service's own rescan finds it.
   */
  cronKick?: () => void;
}
