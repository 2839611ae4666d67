import { replicationWarnings } from '../../src/ops/replicationWarnings';

const spec = (topic: string, replicationFactor?: number) => ({
  topic,
  ...(replicationFactor ? { replicationFactor } : {}),
});

test('a declared factor below the cluster default: one summary line and a warning per topic', () => {
  const w = replicationWarnings([spec('a', 1), spec('b', 1), spec('c', 3)], 3);
  expect(w.summary).toBe(
    "2 topic(s) declared with replication factor 1, below the cluster's default.replication.factor 3: a, b",
  );
  expect(w.byTopic).toEqual({
    a: ["replication factor 1 is below the cluster's default.replication.factor 3"],
    b: ["replication factor 1 is below the cluster's default.replication.factor 3"],
  });
});

test('several factors below the default stay one line, lowest first', () => {
  const w = replicationWarnings([spec('x', 2), spec('y', 1)], 3);
  expect(w.summary).toBe(
    "1 topic(s) declared with replication factor 1, below the cluster's default.replication.factor 3: y; " +
      "1 topic(s) declared with replication factor 2, below the cluster's default.replication.factor 3: x",
  );
});

test('at or above the default, the broker default itself (no factor), or a default not known: no warning', () => {
  for (const [specs, clusterDefault] of [
    [[spec('a', 2), spec('b', 3)], 2],
    [[spec('a'), { topic: 'b', replicationFactor: -1 }], 3],
    [[spec('a', 1)], undefined],
  ] as const) {
    expect(replicationWarnings([...specs], clusterDefault)).toEqual({ byTopic: {} });
  }
});
