/**
 * `tenantPauseOf`: the worker's own answer to "is this tenant paused?", from the pause topic it follows (a local
 * activity: a held execution asks it before it schedules its call again, without a task on any queue).
 */
import type { TenantHoldState } from '../contract/workflow';
import type { ActivityDeps } from './deps';

export function createTenantPauseOf(deps: Pick<ActivityDeps, 'tenantPause'>) {
  /**
   * The tenant's pause while it is paused; null once it is not. Answered from the pauses the worker last read, also
   * while its follow is broken, as its calls are (recordedAttempt.ts): a look that failed instead would be retried
   * inside one workflow task, which Temporal extends every few seconds with events of its own, for as long as Kafka
   * stays out.
   */
  async function tenantPauseOf(tenant: string): Promise<TenantHoldState | null> {
    const pause = deps.tenantPause(tenant);
    return pause ? { pausedAt: pause.at, reason: pause.reason } : null;
  }
  return { tenantPauseOf };
}
