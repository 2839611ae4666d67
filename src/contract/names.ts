/**
 * Names fixed by the contract (docs/contract.md). Everything other systems and operators depend on lives here,
 * so a rename is one diff. Pure module: safe to import from workflow code.
 */

export const TENANT_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const DEFAULT_DISPATCH_TOPIC_PATTERN = '^poimen\\.[a-z0-9][a-z0-9_-]{0,62}\\.dispatch$';

export const WORKFLOW_TYPE = 'dispatch';
export const DEFAULT_TASK_QUEUE = 'poimen-dispatch';
/**
 * The consumer group of one tenant's DLQ commands (`dlq replay`, `discard`, `purge-tests`): one group per DLQ
 * topic, so runs for different tenants never share a group; it holds the tenant's replay progress (contract §8).
 * A tenant name has no dot, so no tenant's group is another's, nor one of the throwaway `poimen-relay-dlq-…` groups.
 */
export function dlqReplayGroup(tenant: string): string {
  return `poimen-relay-dlq.${tenant}`;
}
/**
 * The one group every tenant's DLQ commands once shared. Read only: a partition the tenant's own group has no
 * commit for yet takes its progress from here (kafka/dlqProgress.ts), so upgrading does not replay anything again.
 */
export const SHARED_DLQ_REPLAY_GROUP = 'poimen-relay-dlq';
/**
 * The compacted topic that holds each tenant's pause (`tenant pause` / `resume`), keyed by tenant: its latest record
 * is the tenant's state, read by every ingester at start and followed after. Outside the `poimen.<tenant>.` names, so
 * no tenant's topics and no dispatch pattern take it in.
 */
export const TENANT_PAUSES_TOPIC = 'poimen-relay.tenant-pauses';
/** Prefix of the throwaway groups that read the pause topic (a process's follower, `tenant status`'s read). */
export const TENANT_PAUSES_GROUP_PREFIX = 'poimen-relay-pauses-';
export const DLQ_RETENTION_MS = 1_209_600_000;
/**
 * `max.message.bytes` of the DLQ topics the relay creates. A dead letter carries the record it refuses as JSON
 * text, which escaping grows up to 6× (a control character becomes `\u0001`), so the broker's 1 MB default
 * would refuse the dead letter of a record that was itself accepted. 8 MiB holds any record within the default
 * DISPATCH_MAX_BYTES (1 MiB); what still does not fit is dead-lettered without its payload (`withoutPayload`).
 */
export const DLQ_MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/** Keyword search attributes the relay sets on every dispatch execution (contract §4). */
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

const DISPATCH_TOPIC = /^poimen\.(.+)\.dispatch$/;

/** The tenant of a `poimen.<tenant>.dispatch` topic; undefined for any other topic (incl. `.dispatch.dlq`). */
export function tenantFromTopic(topic: string): string | undefined {
  const tenant = DISPATCH_TOPIC.exec(topic)?.[1];
  return tenant !== undefined && isValidTenant(tenant) ? tenant : undefined;
}

const DLQ_TOPIC = /^poimen\.(.+)\.dispatch\.dlq$/;

/** The tenant of a `poimen.<tenant>.dispatch.dlq` topic; undefined for any other topic. */
export function tenantFromDlqTopic(topic: string): string | undefined {
  const tenant = DLQ_TOPIC.exec(topic)?.[1];
  return tenant !== undefined && isValidTenant(tenant) ? tenant : undefined;
}

/** Kafka key of a dispatch or dead-letter record, by convention (contract §2, §6). */
export function dispatchRecordKey(tenant: string, dispatchKey: string): string {
  return `${tenant}:${dispatchKey}`;
}
