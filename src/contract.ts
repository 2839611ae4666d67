/**
 * Names fixed by ../shared/SPEC.md. Everything other systems and operators depend on lives here,
 * so a rename is one diff. Pure module: safe to import from workflow code.
 */

export const TENANT_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const DEFAULT_DISPATCH_TOPIC_PATTERN = '^poimen\\.[a-z0-9][a-z0-9_-]{0,62}\\.dispatch$';

export const WORKFLOW_TYPE = 'dispatch';
export const DEFAULT_TASK_QUEUE = 'poimen-dispatch';
export const DLQ_REPLAY_GROUP = 'poimen-relay-dlq';
export const DLQ_RETENTION_MS = 1_209_600_000;

/** Keyword search attributes the relay sets on every dispatch execution (SPEC §4). */
export const SEARCH_ATTRIBUTE_NAMES = ['TenantId', 'DispatchKey', 'WorkflowRef', 'GoalId'] as const;
export type SearchAttributeName = (typeof SEARCH_ATTRIBUTE_NAMES)[number];

export function isValidTenant(tenant: string): boolean {
  return TENANT_PATTERN.test(tenant);
}

export const topics = {
  dispatch: (tenant: string): string => `poimen.${tenant}.dispatch`,
  events: (tenant: string): string => `poimen.${tenant}.events`,
  dlq: (tenant: string): string => `poimen.${tenant}.dispatch.dlq`,
};

export function workflowId(tenant: string, dispatchKey: string): string {
  return `dispatch:${tenant}:${dispatchKey}`;
}
