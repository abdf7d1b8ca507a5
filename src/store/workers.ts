/** Worker agents as the store knows them (live connections are the scheduler's). */
export interface WorkerRecord {
  id: string;
  hostname: string;
  slots: number;
  labels: Record<string, string>;
  connectedAt: number;
  lastSeenAt: number;
  state: 'connected' | 'disconnected';
  /** When an admin asked it to drain (null: not draining). Cleared when the worker registers again. */
  drainingAt: number | null;
}

export interface WorkerStore {
  /**
   * Registers (or re-registers) a worker on hello. A worker id is bound to the
   * token that first registered it: the upsert is one statement that changes
   * the row only if it is new, already bound to `tokenId`, or bound to a token
   * that was revoked since. False (nothing changed) when another live token
   * holds the id.
   */
  /**
   * `draining`: the agent says it is draining (its hello): the drain is kept (an earlier time stays),
   * else a registration ends any drain, and the worker that says hello again takes work.
   */
  registerWorker(w: Omit<WorkerRecord, 'state' | 'drainingAt'>, tokenId: string, draining?: boolean): Promise<boolean>;
  /** lastSeenAt = now (heartbeats). */
  touchWorker(id: string, now: number): Promise<void>;
  markWorkerDisconnected(id: string, now: number): Promise<void>;
  /**
   * Records drainingAt = now and signals `drain` for a known worker (to
   * whichever server holds it), in one statement; false if no such worker.
   */
  requestDrain(workerId: string, reason: string, now: number): Promise<boolean>;
  listWorkers(): Promise<WorkerRecord[]>;
}
