/**
 * `tenantPauseOf`: the worker's own answer to "is this tenant paused?", from the pause topic it follows (a local
 * activity: a held execution asks it before it schedules its call again, without a task on any queue).
 */
import type { TenantHoldState } from '../contract/workflow';
import type { ActivityDeps } from './deps';

export function createTenantPauseOf(deps: Pick<ActivityDeps, 'tenantPause' | 'pausesUnknown'>) {
  /**
   * The tenant's pause while it is paused; null once it is not. While the worker's follow of the pauses is broken
   * its answer could be stale either way: it fails, and the look is retried until the follow is back.
   */
  async function tenantPauseOf(tenant: string): Promise<TenantHoldState | null> {
    const unknown = deps.pausesUnknown();
    if (unknown) throw new Error(`the tenant pauses are not known: ${unknown}`);
    const pause = deps.tenantPause(tenant);
    return pause ? { pausedAt: pause.at, reason: pause.reason } : null;
  }
  return { tenantPauseOf };
}
