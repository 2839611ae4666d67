/**
 * The ingester's broker gauges (ingest/monitor.ts) follow the topics it consumes, over a tenant's whole life: a
 * tenant whose dispatch topic is gone, or whose DLQ topic was deleted, leaves no series behind, so a backlog alert
 * (PoimenDlqLagHigh, PoimenDlqMessagesOld) cannot fire for ever on a value nobody measures any more. Real Kafka;
 * the monitor is the relay's own class, given the subscription a topic listing would.
 */
import type { Admin, Kafka, Producer } from 'kafkajs';
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
let producer: Producer;

beforeAll(async () => {
  kafka = createKafka(
    { brokers: testServices().kafkaBrokers, clientId: uniqueName('it-gauges'), groupId: '-', ssl: false },
    logger,
  );
  admin = kafka.admin();
  await admin.connect();
  producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
});

afterAll(async () => {
  await producer?.disconnect();
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

async function tenantWithBacklog(records: number, deadLetters: number): Promise<string> {
  const tenant = uniqueTenant();
  await ensureTopics(admin, tenantTopicSpecs(tenant, { partitions: 1 }));
  const send = (topic: string, n: number) =>
    producer.send({ topic, acks: -1, messages: Array.from({ length: n }, (_, i) => ({ value: `r${i}` })) });
  await send(topics.dispatch(tenant), records);
  await send(topics.dlq(tenant), deadLetters);
  return tenant;
}

test('a tenant whose topics are gone leaves no lag or DLQ backlog series', async () => {
  const [a, b] = [await tenantWithBacklog(3, 2), await tenantWithBacklog(5, 4)];
  let subscribed = [topics.dispatch(a), topics.dispatch(b)];
  const metrics = createMetrics({ defaultMetrics: false });
  const monitor = new IngestMonitor(
    admin,
    uniqueName('it-gauges-group'),
    metrics,
    logger,
    { lagRefreshMs: 3_600_000, dlqRefreshMs: 3_600_000 },
    () => subscribed,
  );
  const refresh = async () => {
    await monitor.refreshLag();
    await monitor.refreshDlqBacklog();
  };

  await refresh();
  expect(await series(metrics, 'poimen_inbox_lag')).toEqual({
    [`${topics.dispatch(a)}/0`]: 3,
    [`${topics.dispatch(b)}/0`]: 5,
  });
  expect(await series(metrics, 'dlq_consumer_lag')).toEqual({ [topics.dlq(a)]: 2, [topics.dlq(b)]: 4 });
  expect(Object.keys(await series(metrics, 'dlq_oldest_message_age_seconds')).sort()).toEqual(
    [topics.dlq(a), topics.dlq(b)].sort(),
  );

  // A's dead letters purged by deleting its DLQ topic: no topic, no backlog.
  await admin.deleteTopics({ topics: [topics.dlq(a)] });
  await waitFor(async () => !(await admin.listTopics()).includes(topics.dlq(a)), { what: 'A’s DLQ deleted' });
  await refresh();
  expect(await series(metrics, 'dlq_consumer_lag')).toEqual({ [topics.dlq(b)]: 4 });
  expect(Object.keys(await series(metrics, 'dlq_oldest_message_age_seconds'))).toEqual([topics.dlq(b)]);

  // B offboarded (its dispatch topic gone from the listing; its DLQ topic kept): none of B's series stay.
  subscribed = [topics.dispatch(a)];
  await refresh();
  expect(await series(metrics, 'poimen_inbox_lag')).toEqual({ [`${topics.dispatch(a)}/0`]: 3 });
  expect(await series(metrics, 'dlq_consumer_lag')).toEqual({});
  expect(await series(metrics, 'dlq_oldest_message_age_seconds')).toEqual({});

  // No tenant left.
  subscribed = [];
  await refresh();
  expect(await series(metrics, 'poimen_inbox_lag')).toEqual({});

  await admin.deleteTopics({
    topics: [topics.dispatch(a), topics.events(a), ...tenantTopicSpecs(b).map((s) => s.topic)],
  });
});
