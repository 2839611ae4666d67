/**
 * Foundation smoke suite: the real broker and the real Temporal server the rest of the suite relies on.
 */
import path from 'node:path';
import { Connection, Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { Kafka, logLevel } from 'kafkajs';
import { SEARCH_ATTRIBUTE_NAMES } from '../src/contract';
import { loadStackConfig } from '../devstack/config';
import { kafkaService } from '../devstack/stack/services';
import { pauseService, resumeService, startService, stopService } from './support/faults';
import { uniqueName } from './support/names';
import { testServices } from './support/testEnv';
import { waitFor } from './support/wait';

const services = testServices();
const kafka = new Kafka({
  clientId: 'it-stack-smoke',
  brokers: services.kafkaBrokers,
  logLevel: logLevel.NOTHING,
});

async function readAll(topic: string, groupId: string, expected: number): Promise<string[]> {
  const consumer = kafka.consumer({ groupId });
  const seen: string[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        seen.push(message.value?.toString('utf8') ?? '<null>');
      },
    });
    await waitFor(() => seen.length >= expected, { what: `${expected} records on ${topic}` });
  } finally {
    await consumer.disconnect();
  }
  return seen;
}

describe('local stack smoke', () => {
  test('(a) creates a topic, produces and consumes a record through kafkajs on the real broker', async () => {
    const topic = uniqueName('it-smoke');
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ key: 'k1', value: 'hello kafka' }] });
    await producer.disconnect();
    expect(await readAll(topic, uniqueName('it-smoke-group'), 1)).toEqual(['hello kafka']);
    await admin.deleteTopics({ topics: [topic] });
    await admin.disconnect();
  });

  test('(b) starts and completes a trivial workflow on the real Temporal server with a real worker', async () => {
    const taskQueue = uniqueName('it-smoke-tq');
    const nativeConnection = await NativeConnection.connect({ address: services.temporalAddress });
    const worker = await Worker.create({
      connection: nativeConnection,
      namespace: services.namespace,
      taskQueue,
      workflowsPath: path.join(__dirname, 'support', 'workflows', 'echo.ts'),
    });
    const connection = await Connection.connect({ address: services.temporalAddress });
    const client = new Client({ connection, namespace: services.namespace });
    try {
      const result = await worker.runUntil(
        client.workflow.execute('echo', { taskQueue, workflowId: uniqueName('it-smoke-wf'), args: ['ping'] }),
      );
      expect(result).toBe('echo: ping');
    } finally {
      await connection.close();
      await nativeConnection.close();
    }
  });

  test('(c) lists the registered search attributes and finds TenantId, DispatchKey, WorkflowRef, GoalId', async () => {
    const connection = await Connection.connect({ address: services.temporalAddress });
    try {
      const res = await connection.operatorService.listSearchAttributes({ namespace: services.namespace });
      const names = Object.keys(res.customAttributes ?? {});
      expect(names).toEqual(expect.arrayContaining([...SEARCH_ATTRIBUTE_NAMES]));
      expect(SEARCH_ATTRIBUTE_NAMES).toEqual(['TenantId', 'DispatchKey', 'WorkflowRef', 'GoalId']);
    } finally {
      await connection.close();
    }
  });

  test('(d) stops Kafka, sees the producer fail, restarts Kafka and finds the same topic and its record', async () => {
    const topic = uniqueName('it-smoke-durable');
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();
    const producer = kafka.producer({ retry: { retries: 0 } });
    await producer.connect();
    await producer.send({ topic, acks: -1, messages: [{ value: 'before the outage' }] });

    await stopService('kafka');
    await expect(
      producer.send({ topic, acks: -1, messages: [{ value: 'during the outage' }] }),
    ).rejects.toThrow();
    await producer.disconnect().catch(() => undefined);

    await startService('kafka');
    const admin2 = kafka.admin();
    await admin2.connect();
    expect(await admin2.listTopics()).toContain(topic);
    await admin2.disconnect();
    expect(await readAll(topic, uniqueName('it-smoke-group'), 1)).toEqual(['before the outage']);
  });

  test('(e) the readiness probe answers "not ready" from a frozen broker in one short try, and "ready" once it is thawed', async () => {
    // A broker that takes connections but answers nothing: frozen, or restarting (it listens while it loads its
    // logs). Under kafkajs's default request timeout each probe would wait 30 s, and a restart's readiness with it.
    const probe = kafkaService(loadStackConfig());
    pauseService('kafka');
    let frozen: { ready: boolean; ms: number };
    try {
      const t0 = Date.now();
      const ready = await probe.isReady();
      frozen = { ready, ms: Date.now() - t0 };
    } finally {
      resumeService('kafka');
    }
    expect(frozen.ready).toBe(false);
    expect(frozen.ms).toBeLessThan(10_000);
    await waitFor(() => probe.isReady(), { what: 'the thawed broker to be ready' });
  });
});
