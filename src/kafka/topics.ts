import type { Admin, ITopicConfig } from 'kafkajs';
import { DLQ_RETENTION_MS, topics } from '../contract';

export interface TenantTopicOptions {
  partitions?: number;
  replicationFactor?: number;
}

/** The three topics of a tenant (SPEC §2). `.dispatch.dlq` keeps dead letters for 14 days. */
export function tenantTopicSpecs(tenant: string, opts: TenantTopicOptions = {}): ITopicConfig[] {
  const base = { numPartitions: opts.partitions ?? 3, replicationFactor: opts.replicationFactor ?? 1 };
  return [
    { topic: topics.dispatch(tenant), ...base },
    { topic: topics.events(tenant), ...base },
    {
      topic: topics.dlq(tenant),
      ...base,
      configEntries: [{ name: 'retention.ms', value: String(DLQ_RETENTION_MS) }],
    },
  ];
}

/** Creates what is missing; topics that exist already count as success. Returns the names created. */
export async function ensureTopics(admin: Admin, specs: ITopicConfig[]): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((s) => !existing.has(s.topic));
  if (missing.length === 0) return [];
  try {
    await admin.createTopics({ topics: missing, waitForLeaders: true });
  } catch (err) {
    // Another process may have created some in between; only fail when a topic is still absent.
    const now = new Set(await admin.listTopics());
    if (missing.some((s) => !now.has(s.topic))) throw err;
  }
  return missing.map((s) => s.topic);
}
