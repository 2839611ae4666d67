/**
 * One isolated relay per test: fresh tenant (and so topics), consumer group, task queue and runs API double,
 * real Kafka and real Temporal, and the relay's own processes. `cleanup()` stops everything it started.
 */
import { Client, Connection } from '@temporalio/client';
import { Kafka, type Producer, logLevel, type IHeaders } from 'kafkajs';
import { topics, workflowId, type DlqRecord, parseDlqRecord } from '../../src/contract';
import { ensureTopics, tenantTopicSpecs } from '../../src/kafka/topics';
import { uniqueName, uniqueTenant } from './names';
import { type RelayProcess, relayEnv, startRelayProcess } from './relay';
import { RunsApiDouble } from './runsApiDouble';
import type { RunsApiOptions } from '../../src/dev/runsApi';
import { testServices } from './testEnv';
import { waitFor } from './wait';

export interface Harness {
  tenant: string;
  api: RunsApiDouble;
  kafka: Kafka;
  client: Client;
  env: NodeJS.ProcessEnv;
  taskQueue: string;
  groupId: string;
  producer: Producer;
  startWorker(label?: string): Promise<RelayProcess>;
  startIngester(label?: string): Promise<RelayProcess>;
  publish(
    value: string | Buffer | null,
    opts?: { key?: string; headers?: IHeaders; topic?: string },
  ): Promise<void>;
  dispatchValue(key: string, extra?: Record<string, unknown>): string;
  readDlq(expected: number, timeoutMs?: number): Promise<DlqRecord[]>;
  wfId(key: string): string;
  /** The group's committed offsets and the topic's end offsets, per partition of the tenant's .dispatch. */
  offsets(): Promise<{ partition: number; committed: number; high: number }[]>;
  cleanup(): Promise<void>;
}

export async function createHarness(
  opts: { partitions?: number; env?: Record<string, string>; tenant?: string; api?: RunsApiOptions } = {},
): Promise<Harness> {
  const services = testServices();
  const tenant = opts.tenant ?? uniqueTenant();
  const kafka = new Kafka({
    clientId: 'it-harness',
    brokers: services.kafkaBrokers,
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, tenantTopicSpecs(tenant, { partitions: opts.partitions ?? 1 }));
  await admin.disconnect();
  const api = await RunsApiDouble.start(opts.api);
  const connection = await Connection.connect({ address: services.temporalAddress });
  const client = new Client({ connection, namespace: services.namespace });
  const producer = kafka.producer({
    allowAutoTopicCreation: false,
    retry: { retries: 30, initialRetryTime: 300, maxRetryTime: 5000 },
  });
  await producer.connect();
  const taskQueue = uniqueName('it-tq');
  const groupId = uniqueName('it-group');
  const env = relayEnv({
    tenantPattern: `^poimen\\.${tenant}\\.dispatch$`,
    groupId,
    taskQueue,
    runsApiUrl: api.url,
    ...(opts.env ? { extra: opts.env } : {}),
  });
  const processes: RelayProcess[] = [];
  const dlqConsumers: { disconnect(): Promise<void> }[] = [];

  const h: Harness = {
    tenant,
    api,
    kafka,
    client,
    env,
    taskQueue,
    groupId,
    producer,
    async startWorker(label = 'worker') {
      const p = await startRelayProcess('worker', env, `${tenant}-${label}`);
      processes.push(p);
      return p;
    },
    async startIngester(label = 'ingest') {
      const p = await startRelayProcess('ingest', env, `${tenant}-${label}`);
      processes.push(p);
      return p;
    },
    async publish(value, o = {}) {
      await producer.send({
        topic: o.topic ?? topics.dispatch(tenant),
        acks: -1,
        messages: [{ key: o.key ?? null, value, ...(o.headers ? { headers: o.headers } : {}) }],
      });
    },
    dispatchValue(key, extra = {}) {
      return JSON.stringify({
        workflow_ref: 'onboarding@v3',
        input: { user: 42 },
        goal_id: 'g-17',
        dispatch_key: key,
        ...extra,
      });
    },
    async readDlq(expected, timeoutMs = 60_000) {
      const consumer = kafka.consumer({ groupId: uniqueName('it-dlq-reader') });
      dlqConsumers.push(consumer);
      const records: DlqRecord[] = [];
      await consumer.connect();
      await consumer.subscribe({ topic: topics.dlq(tenant), fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          const rec = parseDlqRecord(message.value);
          if (rec) records.push(rec);
        },
      });
      await waitFor(() => records.length >= expected, { timeoutMs, what: `${expected} DLQ records` });
      await consumer.disconnect();
      return records;
    },
    wfId: (key) => workflowId(tenant, key),
    async offsets() {
      const admin = kafka.admin();
      await admin.connect();
      try {
        const [committed] = await admin.fetchOffsets({ groupId, topics: [topics.dispatch(tenant)] });
        const high = await admin.fetchTopicOffsets(topics.dispatch(tenant));
        return high.map((p) => ({
          partition: p.partition,
          committed: Number(committed?.partitions.find((c) => c.partition === p.partition)?.offset ?? -1),
          high: Number(p.high),
        }));
      } finally {
        await admin.disconnect();
      }
    },
    async cleanup() {
      await Promise.all(processes.map((p) => p.kill()));
      await Promise.all(dlqConsumers.map((c) => c.disconnect().catch(() => undefined)));
      await producer.disconnect().catch(() => undefined);
      await api.close();
      await connection.close();
    },
  };
  return h;
}
