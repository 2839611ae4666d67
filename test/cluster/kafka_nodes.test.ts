/**
 * Three brokers, replication 3, min ISR 2: a broker dies by kill -9 while dispatches flow through two
 * ingesters and two workers. Kafka elects new leaders; the relay rides through the election, loses nothing,
 * makes no second run and commits the group to the log end. Dead letters written with acks=-1 survive a
 * broker's death.
 */
import { ConfigResourceTypes } from 'kafkajs';
import { topics } from '../../src/contract';
import {
  type Topology,
  afterPublished,
  clusterStack,
  expectExactlyOnce,
  groupCoordinator,
  midStream,
  partitionLeader,
  readAllDlq,
  restoreCluster,
  startTopology,
  streamDispatches,
  waitFullIsr,
} from './support/topology';
import { waitFor } from '../support/wait';

const stack = clusterStack();
let t: Topology;

/** kafkajs's configSource: the value set on the topic itself, not inherited from the broker. */
const TOPIC_CONFIG = 1;

beforeAll(async () => {
  t = await startTopology();
});

afterEach(async () => {
  // A failed test must not leave a node down for the next one.
  await restoreCluster(stack);
  await waitFullIsr(t.h);
});

afterAll(async () => {
  await t?.cleanup();
});

test("the relay's own declarations: every tenant topic, the DLQ's included, 3 replicas and min.insync.replicas=2 set on the topic", async () => {
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
    // The brokers default to min ISR 2 as well: only a topic-level value shows the declaration set it.
    const minIsr = configs.resources.map((r) => {
      const e = r.configEntries[0] as { configValue?: string; configSource?: number } | undefined;
      return [r.resourceName, e?.configValue, e?.configSource];
    });
    expect(minIsr.filter(([, v, source]) => v !== '2' || source !== TOPIC_CONFIG)).toEqual([]);
    expect(minIsr).toHaveLength(60);
  } finally {
    await admin.disconnect();
  }
});

test("the brokers run Kafka's production group setting: a fresh group's first join waits 3 s for more members", async () => {
  const admin = t.h.kafka.admin();
  await admin.connect();
  try {
    const { brokers } = await admin.describeCluster();
    const configs = await admin.describeConfigs({
      includeSynonyms: false,
      resources: brokers.map((b) => ({
        type: ConfigResourceTypes.BROKER,
        name: String(b.nodeId),
        configNames: ['group.initial.rebalance.delay.ms'],
      })),
    });
    const values = configs.resources.map((r) => r.configEntries[0]?.configValue);
    expect(values).toEqual(['3000', '3000', '3000']);
  } finally {
    await admin.disconnect();
  }
});

test('kill -9 the partition leader mid-stream, later the active controller: nothing lost, nothing doubled, offsets at the log end', async () => {
  const s = streamDispatches(t.h, 'leader-kill');
  await afterPublished(s, 150);
  const leader = await partitionLeader(t.h, t.h.tenants[0]!);
  await midStream(s, () => stack.stopService(leader, 'SIGKILL'));
  await afterPublished(s, s.published() + 150);
  // While a node comes back (its log recovery and catch-up take a minute or more) the stream goes on at 5/s:
  // still mid-stream, without a backlog of every second the restart took to drain after it.
  s.pace(5);
  await stack.startService(leader);
  await waitFullIsr(t.h);
  s.pace(20);

  const controller = await stack.activeController();
  await midStream(s, () => stack.stopService(controller, 'SIGKILL'));
  await afterPublished(s, s.published() + 150);
  s.pace(5);
  await midStream(s, () => stack.startService(controller));
  s.pace(20);
  await afterPublished(s, s.published() + 100);
  const keys = await s.stop();
  const account = await expectExactlyOnce(t, keys);
  process.stderr.write(
    `[cluster] leader ${leader} then controller ${controller} killed: ${keys.length} runs, ${account.conflicts} 409s\n`,
  );
  // A 409 is a call repeated after its answer was lost (an attempt timed out on a busy machine): the API's
  // dedup absorbs it, and it is reported, not failed.
});

test('the group coordinator moves to another broker while the old one stays up: every ingester rejoins, nothing lost, nothing doubled, offsets at the log end', async () => {
  // What a preferred-leader election does after a broker rejoins: the old coordinator lives on and answers
  // NOT_COORDINATOR. Here the move is forced by taking that broker out of the offsets partition's replicas.
  const s = streamDispatches(t.h, 'coordinator-move');
  await afterPublished(s, 150);
  const before = await groupCoordinator(t.h);
  const rest = before.replicas.filter((r) => r !== before.leader);
  const admin = t.h.kafka.admin();
  await admin.connect();
  const assign = (replicas: number[]) =>
    admin.alterPartitionReassignments({
      topics: [
        { topic: '__consumer_offsets', partitionAssignment: [{ partition: before.partition, replicas }] },
      ],
    });
  try {
    await midStream(s, () => assign(rest));
    await waitFor(async () => rest.includes((await groupCoordinator(t.h)).leader), {
      timeoutMs: 60_000,
      intervalMs: 500,
      what: `the coordinator of ${t.h.groupId} to leave node ${before.leader}`,
    });
    await afterPublished(s, s.published() + 150);
  } finally {
    // The old node back as the last replica: the new coordinator stays the preferred one.
    await assign([...rest, before.leader]);
    await admin.disconnect();
  }
  await afterPublished(s, s.published() + 100);
  const keys = await s.stop();
  const account = await expectExactlyOnce(t, keys);
  const after = await groupCoordinator(t.h);
  expect(after.leader).not.toBe(before.leader);
  process.stderr.write(
    `[cluster] coordinator moved from node ${before.leader} to node ${after.leader}: ${keys.length} runs, ${account.conflicts} 409s\n`,
  );
});

test('dead letters written with acks=-1 survive the death of their partition leader', async () => {
  t.h.api.faultPolicy((key) => (key?.startsWith('refused-') ? { kind: 'status', status: 422 } : undefined));
  const s = streamDispatches(t.h, 'refused');
  await afterPublished(s, 80);
  // The first tenant's DLQ leader dies while dead letters are being written.
  const dlqLeader = await partitionLeader(t.h, t.h.tenants[0]!, 0, 'dlq');
  await midStream(s, () => stack.stopService(dlqLeader, 'SIGKILL'));
  await afterPublished(s, s.published() + 80);
  const keys = await s.stop();
  await Promise.all([
    stack.startService(dlqLeader).then(() => waitFullIsr(t.h)),
    // Every dispatch closed first: a dead-letter activity still retrying would add copies between the two reads.
    waitFor(
      async () =>
        (await t.h.client.workflow.count(`TaskQueue = "${t.h.taskQueue}" AND ExecutionStatus = "Running"`))
          .count === 0,
      { timeoutMs: 300_000, intervalMs: 1000, what: 'every dispatch closed' },
    ),
  ]);
  const before = await readAllDlq(t.h, keys.length);
  // Then another node dies: every dead letter is still there to read (two copies were acknowledged each).
  const second = await partitionLeader(t.h, t.h.tenants[1]!, 0, 'dlq');
  await stack.stopService(second, 'SIGKILL');
  const after = await readAllDlq(t.h, keys.length);
  const keysOf = (xs: { key: string }[]) => [...new Set(xs.map((x) => x.key))].sort();
  expect(keysOf(before)).toEqual([...keys].sort());
  expect(keysOf(after)).toEqual([...keys].sort());
  // Each dead letter read before, at its topic, partition and offset, is read again after.
  const afterAt = new Set(after.map((x) => x.at));
  expect(before.filter((x) => !afterAt.has(x.at))).toEqual([]);
  expect(after.length).toBe(before.length);
  process.stderr.write(
    `[cluster] ${keys.length} dead letters, ${before.length - keys.length} written twice (at least once, contract §6)\n`,
  );
  expect(keys.filter((k) => t.h.api.runs.has(k))).toEqual([]);
  await Promise.all([stack.startService(second), t.h.expectCommittedAtLogEnd(120_000)]);
});
