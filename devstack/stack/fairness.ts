/**
 * Temporal's task queue fairness, switched on in both stack profiles (server 1.29.1; docs/operations.md says what a
 * self-hosted cluster or Temporal Cloud needs). The relay starts every dispatch with its tenant as the fairness
 * key, so a tenant's backlog is served in weighted turns with the other tenants' instead of ahead of them.
 *
 * - `matching.enableFairness` gives the normal (non-sticky) task queues the fair backlog, ordered by each task's
 *   pass within its priority level, and implies the new matcher there.
 * - `matching.useNewMatcher` also gives the sticky queues the new matcher (they ignore fairness keys either way).
 *
 * 1.29 keeps a fair queue's backlog in `tasks_v2`, a table its SQLite and PostgreSQL schemas have; a backlog
 * written before fairness was switched on stays in the old table until it is switched off again (1.30 adds a
 * migration), so the switch is for a stack without a backlog.
 */
export const FAIRNESS_DYNAMIC_CONFIG: Record<string, boolean> = {
  'matching.enableFairness': true,
  'matching.useNewMatcher': true,
};

/** The same as `key=value` pairs for `temporal server start-dev --dynamic-config-value`. */
export const fairnessDevServerValues = (): string[] =>
  Object.entries(FAIRNESS_DYNAMIC_CONFIG).map(([k, v]) => `${k}=${String(v)}`);
