/**
 * The worker's activities, built by a factory from injected clients (nothing is created at import time):
 * the runs API call (./postRun) and the dead letter (./deadLetter), from what ./deps names.
 */
import type { ActivityDeps } from './deps';
import { createDeadLetter } from './deadLetter';
import { createPostRun } from './postRun';

export function createActivities(deps: ActivityDeps) {
  return { ...createPostRun(deps), ...createDeadLetter(deps) };
}

export type RelayActivities = ReturnType<typeof createActivities>;
