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
}
