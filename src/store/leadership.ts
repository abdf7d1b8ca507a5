/** Singleton duties shared by the servers of one store (the lease sweeper; later cron). */
export interface LeadershipStore {
  /**
   * Takes or renews the lease `name` for `holder` until now + ttlMs, in one
   * atomic statement that succeeds only if the lease is free, expired, or
   * already this holder's. True while `holder` leads. (PostgreSQL uses the
   * database's clock, not `now`, so servers with skewed clocks agree.)
   */
  acquireLeadership(name: string, holder: string, now: number, ttlMs: number): Promise<boolean>;
}
