/**
 * The Store contract: every implementation (SQLite, PostgreSQL) runs this
 * same suite, one file per concern (contract-tasks.ts, contract-attempts.ts,
 * contract-logs.ts, contract-tokens.ts, contract-workers.ts,
 * contract-web-sessions.ts, contract-feed.ts, contract-views.ts, contract-batch.ts,
 * contract-schedules.ts, contract-dags.ts; signals and
 * contract-schedules.ts, contract-outputs.ts; signals and
 * leadership in contract-signals.ts). `open` must return a fresh, empty store
 * each time; the suite calls `migrate()` itself and closes the store after
 * each test. Time is explicit (`now` numbers), and leases expire only through
 * a negative lease (contract-harness.ts): nothing here sleeps or reads the clock.
 * A later feature adds its own contract file and one line here.
 */
import { runAttemptContract } from './contract-attempts.js';
import { runAttemptBatchContract } from './contract-attempt-batches.js';
import { runBatchContract } from './contract-batch.js';
import type { ContractHooks, Opened } from './contract-harness.js';
import { runFeedContract } from './contract-feed.js';
import { runViewContract } from './contract-views.js';
import { runLogContract } from './contract-logs.js';
import { runOutputsContract } from './contract-outputs.js';
import { runTaskContract } from './contract-tasks.js';
import { runRunLaterContract } from './contract-run-later.js';
import { runSubmitClaimContract } from './contract-submit-claim.js';
import { runScheduleContract } from './contract-schedules.js';
import { runDagContract } from './contract-dags.js';
import { runScheduleDagContract } from './contract-schedule-dags.js';
import { runTokenContract } from './contract-tokens.js';
import { runWebSessionContract } from './contract-web-sessions.js';
import { runWorkerContract } from './contract-workers.js';

export { makeSpec, type ContractHooks } from './contract-harness.js';

export function runStoreContract(name: string, open: Opened, hooks: ContractHooks = {}): void {
  runTaskContract(name, open);
  runRunLaterContract(name, open);
  runSubmitClaimContract(name, open);
  runBatchContract(name, open, hooks);
  runAttemptContract(name, open);
  runAttemptBatchContract(name, open, hooks);
  runOutputsContract(name, open);
  runLogContract(name, open);
  runTokenContract(name, open, hooks);
  runWorkerContract(name, open);
  runWebSessionContract(name, open);
  runFeedContract(name, open, hooks);
  runViewContract(name, open);
  runScheduleContract(name, open, hooks);
  runDagContract(name, open, hooks);
  runScheduleDagContract(name, open, hooks);
}
