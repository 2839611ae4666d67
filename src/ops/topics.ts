/**
 * `topics apply` / `topics list`: declare the tenant topics of contract §2 (and other DLQ topics a platform needs)
 * idempotently. A topic that already exists with the declared settings is success; one that exists with
 * different settings is reported, never silently accepted or silently changed.
 */
import fs from 'node:fs';
import { parse } from 'yaml';
import { z } from 'zod';
import { isValidTenant } from '../contract';
import { ConfigError } from '../errors';
import type { KafkaAdmin, TopicSpec } from '../kafka/port';
import { ensureTopics, specsForThisCluster, tenantTopicSpecs, topicConfigs } from '../kafka/topics';

export interface TopicResult {
  topic: string;
  action: 'created' | 'unchanged' | 'differs';
  differences: string[];
  /**
   * Worth an operator's look, not a failed declaration: an existing topic with a lower min.insync.replicas than
   * the replication policy would give a new one (the declaration itself set none). A topic made before that
   * policy must not fail `topics apply` (and the deploy's topics Job) on upgrade.
   */
  warnings: string[];
}

const MIN_ISR = 'min.insync.replicas';

const topicsFileSchema = z.object({
  partitions: z.number().int().min(1).default(3),
  // Absent: the relay's policy from the broker count (replicationFor).
  replicationFactor: z.number().int().min(1).optional(),
  tenants: z.array(z.string()).default([]),
  extraTopics: z
    .array(
      z.object({
        name: z.string().regex(/^[A-Za-z0-9._-]{1,249}$/, 'is not a valid Kafka topic name'),
        partitions: z.number().int().min(1).optional(),
        replicationFactor: z.number().int().min(1).optional(),
        config: z.record(z.string(), z.union([z.string(), z.number()])).default({}),
      }),
    )
    .default([]),
});

export function validateTenants(tenants: string[], flag = '--tenant'): void {
  for (const t of tenants) {
    // A tenant is a topic-name segment: anything outside the contract's pattern (dots, regex characters) could
    // widen the ingester's pattern or collide with another tenant's topics.
    if (!isValidTenant(t))
      throw new ConfigError(flag, `${JSON.stringify(t)} must match ^[a-z0-9][a-z0-9_-]{0,62}$`);
  }
}

/** Topic specs from a declarative file (deploy/topics.yaml): tenants and extra (e.g. memory service) DLQ topics. */
export function specsFromFile(file: string): TopicSpec[] {
  let raw: unknown;
  try {
    raw = parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError('--file', `${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const parsed = topicsFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError('--file', `${file}: ${issue?.path.join('.') ?? ''} ${issue?.message ?? 'invalid'}`);
  }
  const f = parsed.data;
  validateTenants(f.tenants);
  return [
    ...f.tenants.flatMap((t) =>
      tenantTopicSpecs(t, { partitions: f.partitions, replicationFactor: f.replicationFactor }),
    ),
    ...f.extraTopics.map((t) => ({
      topic: t.name,
      numPartitions: t.partitions ?? f.partitions,
      replicationFactor: t.replicationFactor ?? f.replicationFactor,
      configEntries: Object.entries(t.config).map(([name, value]) => ({ name, value: String(value) })),
    })),
  ];
}

/**
 * Declares the topics and compares the existing topics with them, both with the replication the cluster's broker
 * count gives (specsForThisCluster; a caller that has applied it already saves the broker count read).
 */
export async function applyTopics(admin: KafkaAdmin, declared: TopicSpec[]): Promise<TopicResult[]> {
  const ownMinIsr = new Set(
    declared.filter((s) => (s.configEntries ?? []).some((c) => c.name === MIN_ISR)).map((s) => s.topic),
  );
  const specs = await specsForThisCluster(admin, declared);
  let created: Set<string>;
  try {
    // Created concurrently by someone else is fine: ensureTopics waits for it, and it is compared below like
    // any existing topic (reported as created, as this run declared it too).
    created = new Set(await ensureTopics(admin, specs));
  } catch (err) {
    const brokers = (await admin.describeCluster().catch(() => undefined))?.brokers.length;
    throw declarationRefusal(err, specs, brokers) ?? err;
  }
  const results: TopicResult[] = [];
  for (const spec of specs) {
    if (created.has(spec.topic)) {
      results.push({ topic: spec.topic, action: 'created', differences: [], warnings: [] });
      continue;
    }
    const found = await compare(admin, spec);
    const byPolicy = (d: string) => !ownMinIsr.has(spec.topic) && d.startsWith(`${MIN_ISR} `);
    const differences = found.filter((d) => !byPolicy(d));
    results.push({
      topic: spec.topic,
      action: differences.length > 0 ? 'differs' : 'unchanged',
      differences,
      warnings: found
        .filter(byPolicy)
        .map(
          (d) => `${d.replace('(declared', '(a new topic gets')}: acks=all writes wait for fewer replicas`,
        ),
    });
  }
  return results;
}

async function compare(admin: KafkaAdmin, spec: TopicSpec): Promise<string[]> {
  const diffs: string[] = [];
  const meta = await admin.fetchTopicMetadata({ topics: [spec.topic] });
  const partitions = meta.topics[0]?.partitions ?? [];
  if (
    spec.numPartitions !== undefined &&
    spec.numPartitions > 0 &&
    partitions.length !== spec.numPartitions
  ) {
    diffs.push(`partitions ${partitions.length} (declared ${spec.numPartitions})`);
  }
  const rf = partitions[0]?.replicas.length;
  if (spec.replicationFactor !== undefined && spec.replicationFactor > 0 && rf !== spec.replicationFactor) {
    diffs.push(`replication factor ${rf} (declared ${spec.replicationFactor})`);
  }
  const wanted = spec.configEntries ?? [];
  if (wanted.length > 0) {
    const actual =
      (
        await topicConfigs(
          admin,
          [spec.topic],
          wanted.map((c) => c.name),
        )
      ).get(spec.topic) ?? new Map();
    for (const c of wanted) {
      if (actual.get(c.name) !== c.value)
        diffs.push(`${c.name} ${actual.get(c.name) ?? 'unset'} (declared ${c.value})`);
    }
  }
  return diffs;
}

export interface TopicInfo {
  topic: string;
  partitions: number;
  replicationFactor: number;
  retentionMs: string | null;
}

export async function listTopics(admin: KafkaAdmin): Promise<TopicInfo[]> {
  const names = (await admin.listTopics()).filter((t) => !t.startsWith('__')).sort();
  if (names.length === 0) return [];
  const meta = await admin.fetchTopicMetadata({ topics: names });
  const configs = await topicConfigs(admin, names, ['retention.ms']);
  const retention = new Map([...configs].map(([name, c]) => [name, c.get('retention.ms') ?? null]));
  return meta.topics
    .map((t) => ({
      topic: t.name,
      partitions: t.partitions.length,
      replicationFactor: t.partitions[0]?.replicas.length ?? 0,
      retentionMs: retention.get(t.name) ?? null,
    }))
    .sort((a, b) => a.topic.localeCompare(b.topic));
}

/** Kafka's per-topic answers that refuse the declaration itself: the cluster cannot hold it as declared. */
const DECLARATION_REFUSALS = new Set([
  'INVALID_REPLICATION_FACTOR',
  'INVALID_PARTITIONS',
  'INVALID_CONFIG',
  'INVALID_REPLICA_ASSIGNMENT',
  'POLICY_VIOLATION',
]);

/**
 * A declaration Kafka refused (e.g. a replication factor above the broker count), as one line with Kafka's
 * reason and the topics it names: a usage error, not a crash. Undefined for any other failure.
 */
function declarationRefusal(
  err: unknown,
  specs: TopicSpec[],
  brokers: number | undefined,
): ConfigError | undefined {
  const errors = (err as { errors?: unknown } | undefined)?.errors;
  if (!Array.isArray(errors) || errors.length === 0) return undefined;
  const byReason = new Map<string, string[]>();
  for (const e of errors as { topic?: unknown; type?: unknown; message?: unknown }[]) {
    if (typeof e.type !== 'string' || !DECLARATION_REFUSALS.has(e.type)) return undefined;
    const spec = specs.find((s) => s.topic === e.topic);
    const declared =
      e.type === 'INVALID_REPLICATION_FACTOR'
        ? ` (declared replication factor ${spec?.replicationFactor ?? '?'}; the cluster has ${brokers ?? '?'} broker(s))`
        : e.type === 'INVALID_PARTITIONS'
          ? ` (declared partitions ${spec?.numPartitions ?? '?'})`
          : '';
    const reason = `${String(e.message)}${declared}`;
    byReason.set(reason, [...(byReason.get(reason) ?? []), String(e.topic)]);
  }
  const text = [...byReason].map(([reason, names]) => `${reason}: ${names.join(', ')}`).join('; ');
  return new ConfigError('topics apply', `was refused by Kafka: ${text}`);
}
