/**
 * The bench's tenant topics (tools/bench/rig.ts): on the cluster profile they are made as production runs them,
 * RF 3 with min.insync.replicas=2 (docs/operations.md), so the cluster's figures include what acks=-1 costs there.
 */
import { topics } from '../../src/contract';
import { benchTopicSpecs } from '../../tools/bench/rig';

const minIsr = (entries: { name: string; value: string }[] | undefined) =>
  (entries ?? []).filter((e) => e.name === 'min.insync.replicas');

test('RF 3: all three topics replicated three times, min.insync.replicas=2 set exactly once on each', () => {
  const specs = benchTopicSpecs('acme', 4, 3);
  expect(specs.map((s) => s.topic)).toEqual([
    topics.dispatch('acme'),
    topics.events('acme'),
    topics.dlq('acme'),
  ]);
  for (const spec of specs) {
    expect(spec.numPartitions).toBe(4);
    expect(spec.replicationFactor).toBe(3);
    expect(minIsr(spec.configEntries)).toEqual([{ name: 'min.insync.replicas', value: '2' }]);
  }
  // The DLQ's own settings stay.
  expect(specs[2]!.configEntries?.map((e) => e.name)).toContain('retention.ms');
});

test("RF 1 (the dev profile's single broker): no min.insync.replicas", () => {
  for (const spec of benchTopicSpecs('acme', 2, 1)) {
    expect(spec.replicationFactor).toBe(1);
    expect(minIsr(spec.configEntries)).toEqual([]);
  }
});
