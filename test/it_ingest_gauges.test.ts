/**
 * The ingester's broker gauges (ingest/monitor.ts) follow the topics it consumes, over a tenant's whole life: a
 * tenant whose dispatch topic is gone, or whose DLQ topic was deleted, leaves no series behind, so a backlog alert
 * (PoimenDlqLagHigh, PoimenDlqMessagesOld) cannot fire for ever on a value nobody measures any more; and a topic
 * deleted by an operator (from a client of its own) stops no other tenant's gauges. Real Kafka; the monitor is the
 * relay's own class on a client of its own, given the subscription a topic listing would.
 */
import type { Admin, Kafka } from 'kafkajs';
import { topics } from '../src/contract';
import { createKafka } from '../src/kafka/client';
import { ensureTopics, tenantTopicSpecs } from '../src/kafka/topics';
import { IngestMonitor } from '../src/ingest/monitor';
import { createLogger } from '../src/logger';
import { type RelayMetrics, createMetrics } from '../src/metrics';
import { uniqueName, uniqueTenant } from './support/names';
import { testServices } from './support/testEnv';
import { waitFor } from './support/wait';

jest.setTimeout(120_000);

const logger = createLogger('it-ingest-gauges', 'silent');
let kafka: Kafka;
let admin: Admin;

beforeAll(async () => {
  kafka = createKafka(
    { brokers: testServices().kafkaBrokers, clientId: uniqueName('it-gauges'), groupId: '-', ssl: false },
    logger,
  );
  admin = kafka.admin();
  await admin.connect();
});

afterAll(async () => {
  await admin?.disconnect();
});

/** The gauge's series as `label=value` → value, for the labels given. */
async function series(metrics: RelayMetrics, name: string): Promise<Record<string, number>> {
  const metric = metrics.registry.getSingleMetric(name)!;
  const out: Record<string, number> = {};
  for (const v of (await metric.get()).values) {
    out[Object.values(v.labels).join('/')] = v.value;
  }
  return out;
}

/**
 * Writes records with a producer of its own each time: a kafkajs client that asked about a topic deleted since fails
 * every later metadata refresh (what the relay's own clients must survive, not the test's).
 */
async function send(topic: string, n: number): Promise<void> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    await producer.send({
      topic,
      acks: -1,
      messages: Array.from({ length: n }, (_, i) => ({ value: `r${i}` })),
    });
  } finally {
    await producer.disconnect();
  }
}

async function tenantWithBacklog(records: number, deadLetters: number): Promise<string> {
  const tenant = uniqueTenant();
  await ensureTopics(admin, tenantTopicSpecs(tenant, { partitions: 1 }));
  await send(topics.dispatch(tenant), records);
  await send(topics.dlq(tenant), deadLetters);
  return tenant;
}

/** Deletes the topics as an operator does: from a client of its own, not the monitor's. */
async function deleteTopics(names: string[]): Promise<void> {
  await admin.deleteTopics({ topics: names });
  await waitFor(async () => !(await admin.listTopics()).some((t) => names.includes(t)), {
    what: `${names.join(', ')} deleted`,
  });
}

function monitorOf(subscribed: () => string[]) {
  const metrics = createMetrics({ defaultMetrics: false });
  // The ingester's client: its own connection to Kafka, as in the relay (the operator's admin is another).
  const relayKafka = createKafka(
    {
      brokers: testServices().kafkaBrokers,
      clientId: uniqueName('it-gauges-relay'),
      groupId: '-',
      ssl: false,
    },
    logger,
  );
  const monitor = new IngestMonitor(
    relayKafka,
    uniqueName('it-gauges-group'),
    metrics,
    logger,
    { lagRefreshMs: 3_600_000, dlqRefreshMs: 3_600_000 },
    subscribed,
  );
  const refresh = async () => {
    await monitor.refreshLag();
    await monitor.refreshDlqBacklog();
  };
  /** Rounds until both gauges have `tenants` series: a broker no group has used yet has no coordinator at first. */
  const firstRounds = (tenants: number) =>
    waitFor(
      async () => {
        await refresh();
        const lag = Object.keys(await series(metrics, 'poimen_inbox_lag')).length;
        return lag === tenants && Object.keys(await series(metrics, 'dlq_consumer_lag')).length === tenants;
      },
      { timeoutMs: 60_000, what: 'the gauges’ first round' },
    );
  return { metrics, monitor, refresh, firstRounds };
}

test("a DLQ topic deleted by an operator takes its series, and only its own: the others' are still measured", async () => {
  const [a, b] = [await tenantWithBacklog(3, 2), await tenantWithBacklog(5, 4)];
  const { metrics, monitor, refresh, firstRounds } = monitorOf(() => [
    topics.dispatch(a),
    topics.dispatch(b),
  ]);
  try {
    await firstRounds(2);
    expect(await series(metrics, 'poimen_inbox_lag')).toEqual({
      [`${topics.dispatch(a)}/0`]: 3,
      [`${topics.dispatch(b)}/0`]: 5,
    });
    expect(await series(metrics, 'dlq_consumer_lag')).toEqual({ [topics.dlq(a)]: 2, [topics.dlq(b)]: 4 });
    expect(Object.keys(await series(metrics, 'dlq_oldest_message_age_seconds')).sort()).toEqual(
      [topics.dlq(a), topics.dlq(b)].sort(),
    );

    // A's dead letters purged by deleting its DLQ topic; B's backlog and lag go on changing.
    await deleteTopics([topics.dlq(a)]);
    await send(topics.dispatch(b), 1);
    await send(topics.dlq(b), 1);
    await refresh();
    expect(await series(metrics, 'dlq_consumer_lag')).toEqual({ [topics.dlq(b)]: 5 });
    expect(Object.keys(await series(metrics, 'dlq_oldest_message_age_seconds'))).toEqual([topics.dlq(b)]);
    expect(await series(metrics, 'poimen_inbox_lag')).toEqual({
      [`${topics.dispatch(a)}/0`]: 3,
      [`${topics.dispatch(b)}/0`]: 6,
    });
  } finally {
    await monitor.close();
  }
  await deleteTopics([topics.dispatch(a), topics.events(a), ...tenantTopicSpecs(b).map((s) => s.topic)]);
});

test('a tenant offboarded (its topics deleted by an operator) leaves no series; the others are still measured', async () => {
  const [a, b] = [await tenantWithBacklog(3, 2), await tenantWithBacklog(5, 4)];
  let subscribed = [topics.dispatch(a), topics.dispatch(b)];
  const { metrics, monitor, refresh, firstRounds } = monitorOf(() => subscribed);
  try {
    await firstRounds(2);
    await deleteTopics(tenantTopicSpecs(b).map((s) => s.topic));
    // Until the next topic listing the ingester still names B's deleted topic: the round keeps its last values.
    await refresh();
    subscribed = [topics.dispatch(a)];
    await send(topics.dispatch(a), 1);
    await refresh();
    expect(await series(metrics, 'poimen_inbox_lag')).toEqual({ [`${topics.dispatch(a)}/0`]: 4 });
    expect(await series(metrics, 'dlq_consumer_lag')).toEqual({ [topics.dlq(a)]: 2 });
    expect(Object.keys(await series(metrics, 'dlq_oldest_message_age_seconds'))).toEqual([topics.dlq(a)]);

    // No tenant left.
    subscribed = [];
    await refresh();
    expect(await series(metrics, 'poimen_inbox_lag')).toEqual({});
    expect(await series(metrics, 'dlq_consumer_lag')).toEqual({});
  } finally {
    await monitor.close();
  }
  await deleteTopics(tenantTopicSpecs(a).map((s) => s.topic));
});
