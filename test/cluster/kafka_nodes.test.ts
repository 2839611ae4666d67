/**
 * Three brokers, replication 3, min ISR 2: a broker dies by kill -9 while dispatches flow through two
 * ingesters and two workers. Kafka elects new leaders; the relay rides through the election, loses nothing,
 * makes no second run and commits the group to the log end. Dead letters written with acks=-1 survive a
 * broker's death.
 */
import { ConfigResourceTypes } from 'kafkajs';
import { topics } from '../../src/contract';
import { KAFKA_NODES } from '../../src/devstack/stack/clusterStack';
import {
  type Topology,
  afterPublished,
  clusterStack,
  expectExactlyOnce,
  partitionLeader,
  readAllDlq,
  startTopology,
  streamDispatches,
  waitFullIsr,
} from './support/topology';

const stack = clusterStack();
let t: Topology;

beforeAll(async () => {
  t = await startTopology();
});

afterAll(async () => {
  await t?.cleanup();
  // A failed test must not leave a node down for the next file.
  await stack.startServices([...KAFKA_NODES]);
});

test('every tenant topic, the DLQ topics included, has 3 replicas and min.insync.replicas=2', async () => {
  const admin = t.h.kafka.admin();
  await admin.connect();
  try {
    const names = t.h.tenants.flatMap((x) => [topics.dispatch(x), topics.events(x), topics.dlq(x)]);
    const { topics: md } = await admin.fetchTopicMetadata({ topics: names });
    expect(md.filter((x) => x.partitions.some((p) => p.replicas.length !== 3)).map((x) => x.name)).toEqual(
      [],
    );
    const configs = await admin.describeConfigs({
      includeSynonyms: false,
      resources: names.map((name) => ({
        type: ConfigResourceTypes.TOPIC,
        name,
        configNames: ['min.insync.replicas'],
      })),
    });
    const minIsr = configs.resources.map((r) => [r.resourceName, r.configEntries[0]?.configValue]);
    expect(minIsr.filter(([, v]) => v !== '2')).toEqual([]);
    expect(minIsr).toHaveLength(60);
  } finally {
    await admin.disconnect();
  }
});

test('kill -9 the partition leader mid-stream, later the active controller: nothing lost, nothing doubled, offsets at the log end', async () => {
  const s = streamDispatches(t.h, 'leader-kill', 600);
  await afterPublished(s, 150);
  const leader = await partitionLeader(t.h, t.h.tenants[0]!);
  await stack.stopService(leader, 'SIGKILL');
  await afterPublished(s, 300);
  await stack.startService(leader);
  await waitFullIsr(t.h);

  const controller = await stack.activeController();
  await stack.stopService(controller, 'SIGKILL');
  await afterPublished(s, 450);
  await stack.startService(controller);
  await s.done;
  const account = await expectExactlyOnce(t, s.keys);
  process.stderr.write(
    `[cluster] leader ${leader} then controller ${controller} killed: ${s.keys.length} runs, ${account.conflicts} 409s\n`,
  );
  await waitFullIsr(t.h);
});

test('dead letters written with acks=-1 survive the death of their partition leader', async () => {
  t.h.api.faultPolicy((key) => (key?.startsWith('refused-') ? { kind: 'status', status: 422 } : undefined));
  const s = streamDispatches(t.h, 'refused', 200);
  await afterPublished(s, 80);
  // The first tenant's DLQ leader dies while dead letters are being written.
  const dlqLeader = await partitionLeader(t.h, t.h.tenants[0]!, 0, 'dlq');
  await stack.stopService(dlqLeader, 'SIGKILL');
  await s.done;
  await stack.startService(dlqLeader);
  await waitFullIsr(t.h);
  const before = await readAllDlq(t.h, s.keys.length);
  // Then another node dies: every dead letter is still there to read (two copies were acknowledged each).
  const second = await partitionLeader(t.h, t.h.tenants[1]!, 0, 'dlq');
  await stack.stopService(second, 'SIGKILL');
  try {
    const after = await readAllDlq(t.h, s.keys.length);
    const keysOf = (xs: { key: string }[]) => [...new Set(xs.map((x) => x.key))].sort();
    expect(keysOf(before)).toEqual([...s.keys].sort());
    expect(keysOf(after)).toEqual([...s.keys].sort());
    expect(after.length).toBe(before.length);
  } finally {
    await stack.startService(second);
  }
  expect(s.keys.filter((k) => t.h.api.runs.has(k))).toEqual([]);
  await t.h.expectCommittedAtLogEnd(120_000);
});
