/**
 * The replication policy of every topic the relay declares (docs/operations.md, "Replication of the declared
 * topics"): left to the relay, a topic gets 3 replicas on a cluster of 3 or more brokers, and every topic with 3
 * or more replicas gets min.insync.replicas=2, so an acks=all write (dead letters, replays) survives one broker
 * lost. A declared factor or min ISR wins. The real single broker is in test/it_operations.test.ts; a real
 * 3-broker cluster in test/cluster/.
 */
import type { Admin, ITopicConfig } from 'kafkajs';
import { topics } from '../../src/contract';
import { replicationFor, specsForCluster, tenantTopicSpecs } from '../../src/kafka/topics';
import { applyTopics } from '../../src/ops/topics';

const MIN_ISR = 'min.insync.replicas';
const minIsr = (s: ITopicConfig) => s.configEntries?.find((c) => c.name === MIN_ISR)?.value;

describe('replicationFor', () => {
  it.each([
    [1, -1, undefined],
    [2, -1, undefined],
    [3, 3, 2],
    [5, 3, 2],
  ])(
    '%i live broker(s), no factor declared: replication factor %i (-1: the broker default), min ISR %s',
    (brokers, rf, isr) => {
      expect(replicationFor(brokers)).toEqual({ replicationFactor: rf, minInsyncReplicas: isr });
    },
  );

  it('a declared factor wins over the broker count, and its min ISR follows it', () => {
    expect(replicationFor(3, 1)).toEqual({ replicationFactor: 1, minInsyncReplicas: undefined });
    // Fewer than 3 replicas keep the broker's min ISR: a topic-level 1 would override a stricter broker default.
    expect(replicationFor(5, 2)).toEqual({ replicationFactor: 2, minInsyncReplicas: undefined });
    expect(replicationFor(1, 3)).toEqual({ replicationFactor: 3, minInsyncReplicas: 2 });
  });
});

describe('the tenant topics on a cluster', () => {
  const tenant = 'acme';
  const names = [topics.dispatch(tenant), topics.events(tenant), topics.dlq(tenant)];

  it("one broker: the broker's default replication (-1) and no min ISR on the three topics", () => {
    const specs = specsForCluster(tenantTopicSpecs(tenant), 1);
    expect(specs.map((s) => [s.topic, s.replicationFactor, minIsr(s)])).toEqual(
      names.map((n) => [n, -1, undefined]),
    );
  });

  it('two of three brokers live (one down while a topic is declared): never fewer replicas for good, the broker default decides', () => {
    const specs = specsForCluster(tenantTopicSpecs(tenant), 2);
    expect(specs.map((s) => s.replicationFactor)).toEqual([-1, -1, -1]);
  });

  it('three brokers: replication factor 3 and min ISR 2 on all three, the DLQ keeping its retention and size', () => {
    const specs = specsForCluster(tenantTopicSpecs(tenant), 3);
    expect(specs.map((s) => [s.topic, s.replicationFactor, minIsr(s)])).toEqual(
      names.map((n) => [n, 3, '2']),
    );
    const dlq = specs.find((s) => s.topic === topics.dlq(tenant));
    expect(dlq?.configEntries).toEqual(
      expect.arrayContaining([
        { name: 'retention.ms', value: '1209600000' },
        { name: 'max.message.bytes', value: expect.stringMatching(/^\d+$/) },
      ]),
    );
    expect(dlq?.configEntries).toHaveLength(3);
  });

  it('a declared replication factor wins: 1 on three brokers is declared as 1, without min ISR', () => {
    const specs = specsForCluster(tenantTopicSpecs(tenant, { replicationFactor: 1 }), 3);
    expect(specs.map((s) => [s.replicationFactor, minIsr(s)])).toEqual(names.map(() => [1, undefined]));
  });

  it('a declared min ISR wins, and applying the policy twice changes nothing', () => {
    const own: ITopicConfig = { topic: 'x', configEntries: [{ name: MIN_ISR, value: '3' }] };
    const once = specsForCluster([own], 5);
    expect(once).toEqual([
      { topic: 'x', replicationFactor: 3, configEntries: [{ name: MIN_ISR, value: '3' }] },
    ]);
    expect(specsForCluster(once, 1)).toEqual(once);
  });
});

/** An admin over a cluster of `brokers` brokers holding `existing` topics, each with its settings. */
function fakeAdmin(
  brokers: number,
  existing: Record<string, { partitions: number; replicas: number; configs: Record<string, string> }>,
) {
  const created: ITopicConfig[] = [];
  let describeClusterCalls = 0;
  const admin = {
    describeCluster: async () => {
      describeClusterCalls++;
      return {
        clusterId: 'c',
        controller: 1,
        brokers: Array.from({ length: brokers }, (_, i) => ({
          nodeId: i + 1,
          host: '127.0.0.1',
          port: 9092 + i,
        })),
      };
    },
    listTopics: async () => [...Object.keys(existing), ...created.map((t) => t.topic)],
    createTopics: async ({ topics: specs }: { topics: ITopicConfig[] }) => {
      created.push(...specs);
      return true;
    },
    fetchTopicMetadata: async ({ topics: names }: { topics: string[] }) => ({
      topics: names.map((name) => ({
        name,
        partitions: Array.from({ length: existing[name]!.partitions }, (_, p) => ({
          partitionId: p,
          leader: 1,
          replicas: Array.from({ length: existing[name]!.replicas }, (_, r) => r + 1),
          isr: [],
        })),
      })),
    }),
    describeConfigs: async ({ resources }: { resources: { name: string; configNames: string[] }[] }) => ({
      resources: resources.map((r) => ({
        resourceName: r.name,
        configEntries: r.configNames.map((c) => ({
          configName: c,
          configValue: existing[r.name]!.configs[c],
        })),
      })),
    }),
  } as unknown as Admin;
  return { admin, created, describeClusterCalls: () => describeClusterCalls };
}

describe('topics apply against a cluster', () => {
  it('creates the tenant topics on three brokers with replication factor 3 and min ISR 2, reading the broker count once', async () => {
    const { admin, created, describeClusterCalls } = fakeAdmin(3, {});
    const results = await applyTopics(admin, tenantTopicSpecs('acme', { partitions: 1 }));
    expect(results.map((r) => r.action)).toEqual(['created', 'created', 'created']);
    expect(results.every((r) => r.warnings.length === 0)).toBe(true);
    expect(created.map((s) => [s.topic, s.replicationFactor, minIsr(s)])).toEqual(
      [topics.dispatch('acme'), topics.events('acme'), topics.dlq('acme')].map((n) => [n, 3, '2']),
    );
    expect(describeClusterCalls()).toBe(1);
  });

  it('an existing topic with a lower min ISR than the policy gives is a warning, not a difference (an upgrade must not fail topics apply)', async () => {
    const dlqConfigs = { 'retention.ms': '1209600000', 'max.message.bytes': '8388608' };
    const { admin, created } = fakeAdmin(3, {
      [topics.dispatch('acme')]: { partitions: 3, replicas: 3, configs: { [MIN_ISR]: '1' } },
      [topics.events('acme')]: { partitions: 3, replicas: 3, configs: { [MIN_ISR]: '2' } },
      [topics.dlq('acme')]: { partitions: 3, replicas: 3, configs: { ...dlqConfigs, [MIN_ISR]: '1' } },
    });
    const results = await applyTopics(admin, tenantTopicSpecs('acme'));
    expect(created).toEqual([]);
    const warning = 'min.insync.replicas 1 (a new topic gets 2): acks=all writes wait for fewer replicas';
    expect(results).toEqual([
      { topic: topics.dispatch('acme'), action: 'unchanged', differences: [], warnings: [warning] },
      { topic: topics.events('acme'), action: 'unchanged', differences: [], warnings: [] },
      { topic: topics.dlq('acme'), action: 'unchanged', differences: [], warnings: [warning] },
    ]);
  });

  it('a min ISR the declaration sets itself is compared like any other setting', async () => {
    const { admin } = fakeAdmin(3, {
      x: { partitions: 3, replicas: 3, configs: { [MIN_ISR]: '1' } },
    });
    const results = await applyTopics(admin, [
      { topic: 'x', numPartitions: 3, replicationFactor: 3, configEntries: [{ name: MIN_ISR, value: '2' }] },
    ]);
    expect(results).toEqual([
      { topic: 'x', action: 'differs', differences: ['min.insync.replicas 1 (declared 2)'], warnings: [] },
    ]);
  });
});
