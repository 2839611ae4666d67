/**
 * Whose turn the worker's next circuit-breaker probe is; breakerGate.ts asks before each admission.
 *
 * The tenants with attempts waiting on the worker's open breaker take the probe in turns: a tenant that has
 * probed since the breaker opened lets a waiting attempt of a tenant that has not, or that probed longer ago, go
 * first; among one tenant's attempts, the one that began waiting first. Why: after a shared outage, one tenant
 * whose own backend stays down, holding most of the waiting attempts, would otherwise spend probe after probe on
 * its own failures (no witness, since nothing else is answered while the breaker is open) while every other
 * tenant's calls stayed held. Still one probe per interval; a lone tenant's outage is unchanged. The turns are
 * forgotten when the breaker closes.
 */
export class ProbeTurns {
  /** Attempts waiting on the worker's breaker, per tenant. */
  private readonly counts = new Map<string, number>();
  /** When each tenant last took the probe since the breaker opened (a sequence number). */
  private readonly probed = new Map<string, number>();
  private turns = 0;

  waiting(tenant: string, delta: 1 | -1): void {
    const n = (this.counts.get(tenant) ?? 0) + delta;
    if (n === 0) this.counts.delete(tenant);
    else this.counts.set(tenant, n);
  }

  /** The tenant's attempt called as the probe (one that made no call, or was cancelled, keeps the turn). */
  took(tenant: string): void {
    this.probed.set(tenant, ++this.turns);
  }

  /** True when the tenant should not take the probe now: a waiting tenant's turn is older than its own. */
  yields(tenant: string): boolean {
    const mine = this.probed.get(tenant);
    if (mine === undefined) return false;
    for (const t of this.counts.keys()) {
      const theirs = this.probed.get(t);
      if (t !== tenant && (theirs === undefined || theirs < mine)) return true;
    }
    return false;
  }

  reset(): void {
    this.probed.clear();
  }
}
