/**
 * What the store tells every server attached to it, after the change is
 * committed. PostgreSQL: NOTIFY to every LISTENing server, this one included;
 * `cancel` inside the changing transaction (sent if and only if it commits),
 * the frequent hints `wake` and `task` right after the commit (a crash in
 * between loses the hint; the one-second sweeps cover it). SQLite: emitted in
 * this process after the commit (one server per file).
 *
 * A lost `cancel` loses no cancel: the stop order is stored on the attempt and
 * repeated on every heartbeat answer (store/attempts.ts renewLeases).
 */
export type StoreSignal =
  /** A task became waiting (submitted, backoff over, requeued, retried, an old attempt ended): dispatch. */
  | { kind: 'wake' }
  /** A task changed state or has new output: wake its log followers. */
  | { kind: 'task'; taskId: string }
  /** A running attempt must stop (cancelled or superseded): the server holding its worker sends `cancel`. */
  | { kind: 'cancel'; taskId: string; attemptId: number }
  /** An admin drained a worker: the server holding its connection sends `drain`. */
  | { kind: 'drain'; workerId: string; reason: string };
