/** Singleton duties shared by the servers of one store (the lease sweeper, the cron firer). */
export interface LeadershipStore {
  /**
   * Takes or renews the lease `name` for `holder` until now + ttlMs, in one
   * atomic statement that succeeds only if the lease is free, expired, or
   * already this holder's. True while `holder` leads. (PostgreSQL uses the
   * database's clock, not `now`, so servers with skewed clocks agree.)
   * The same statement as acquireLeadershipEpoch, so it moves epochs too.
   */
  acquireLeadership(name: string, holder: string, now: number, ttlMs: number): Promise<boolean>;
  /**
   * acquireLeadership that also returns the lease's fencing epoch (null: not
   * leading). The epoch is 1 when the lease is first taken and grows by one
   * each time it changes holder or is taken after it expired (by anyone,
   * the same holder included); a renewal of a live lease keeps it. A duty
   * whose writes must not land after the lease was lost passes the epoch
   * into them (schedules.ts fireSchedule checks holder, epoch and expiry in
   * its transaction).
   */
  acquireLeadershipEpoch(name: string, holder: string, now: number, ttlMs: number): Promise<number | null>;
}
