/**
 * Facts of the pause topic (contract §2, "Pausing a tenant") that its writer (./tenantPauses.ts) and its follower
 * (./tenantPauseFollower.ts) share: how it is declared, what a record of it holds, whether it exists, and what
 * Kafka's refusal to show it means.
 */
import type { Admin, ITopicConfig, KafkaMessage } from 'kafkajs';
import { TENANT_PAUSES_TOPIC } from '../contract/names';
import { type TenantPause, type TenantPauseDeleted, decodeTenantPause } from '../contract/tenantPause';
import { AccessRefusedError } from '../errors';
import { kafkaNotAuthorized, topicUnknown } from './errors';

/** One partition: every pause of a tenant in one ordered log. Compacted: a tenant's latest pause is kept. */
export const TENANT_PAUSES_TOPIC_SPEC: ITopicConfig = {
  topic: TENANT_PAUSES_TOPIC,
  numPartitions: 1,
  configEntries: [{ name: 'cleanup.policy', value: 'compact' }],
};

/** The pause a record holds, its deletion, or why it holds neither. */
export function pauseOf(message: KafkaMessage): TenantPause | TenantPauseDeleted | string {
  return decodeTenantPause(message.key?.toString('utf8') ?? null, message.value?.toString('utf8') ?? null);
}

/**
 * Whether the topic exists, asked by name: a listing would leave out a topic this principal may not Describe, and
 * a pause nobody can see would be a pause that silently holds nothing (Kafka answers the name with a refusal).
 */
export async function pauseTopicExists(admin: Admin): Promise<boolean> {
  try {
    await admin.fetchTopicMetadata({ topics: [TENANT_PAUSES_TOPIC] });
    return true;
  } catch (err) {
    if (topicUnknown(err)) return false;
    throw err;
  }
}

/** Kafka refused this principal the topic or its throwaway group: no wait cures it. */
export function pauseTopicRefusal(err: unknown): Error | undefined {
  const denied = kafkaNotAuthorized(err);
  if (!denied) return undefined;
  return new AccessRefusedError(
    `Kafka refused reading the tenant pauses (${TENANT_PAUSES_TOPIC}): ${denied} (docs/access.md lists the ACLs)`,
  );
}
