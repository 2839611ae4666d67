/**
 * The worker's activities, built by a factory from injected clients (nothing is created at import time):
 * the runs API call (./postRun), the dead letter (./deadLetter) and a held execution's look at its tenant's pause
 * (./tenantPauseOf), from what ./deps names.
 */
import type { ActivityDeps } from './deps';
import { createDeadLetter } from './deadLetter';
import { createPostRun } from './postRun';
import { createTenantPauseOf } from './tenantPauseOf';

export function createActivities(deps: ActivityDeps) {
  return { ...createPostRun(deps), ...createDeadLetter(deps), ...createTenantPauseOf(deps) };
}

export type RelayActivities = ReturnType<typeof createActivities>;
