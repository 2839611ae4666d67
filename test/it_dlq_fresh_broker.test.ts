/**
 * DLQ commands on a broker no consumer group has used yet (a new cluster, or one whose group coordinator is
 * still loading): the command's group is the first, so Kafka creates its offsets topic and loads the coordinator
 * while the command joins. `dlq list` and `dlq replay --dry-run` still read what is there, exit 0 and print no
 * stack trace, and `dlq replay` re-publishes them. On a dedicated broker of the cached Kafka jars, started fresh
 * for each test.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import { buildDlqRecord, topics } from '../src/contract';
import { ensureTopics, tenantTopicSpecs } from '../src/kafka/topics';
import { type CliResult, cliEnv, runCli } from './support/cli';
import { type DedicatedKafka, startKafkaWithProperties } from './support/dedicatedKafka';
import { uniqueTenant } from './support/names';
import { tempDir } from './support/tlsServices';

jest.setTimeout(300_000);

const PARTITIONS = 3;

let dir: string | undefined;
let broker: DedicatedKafka | undefined;

afterEach(async () => {
  await broker?.stop();
  broker = undefined;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A fresh broker with one tenant's topics and `count` dead letters on its DLQ; nothing has read them. */
async function freshBrokerWithDeadLetters(count: number): Promise<{ tenant: string; ids: string[] }> {
  dir = tempDir('poimen-fresh-broker-');
  broker = await startKafkaWithProperties(dir, []);
  const kafka = new Kafka({ brokers: [broker.brokers], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const producer = kafka.producer();
  const tenant = uniqueTenant();
  const ids: string[] = [];
  await admin.connect();
  await producer.connect();
  try {
    await ensureTopics(admin, tenantTopicSpecs(tenant, { partitions: PARTITIONS }));
    for (let i = 0; i < count; i++) {
      const record = buildDlqRecord({
        id: crypto.randomUUID(),
        timestamp: Date.now(),
        type: 'dispatch_failure',
        tenant,
        dispatchKey: `k-${i}`,
        error: 'runs API answered 422',
        httpStatus: 422,
        source: {
          topic: topics.dispatch(tenant),
          partition: 0,
          offset: String(i),
          timestamp: String(Date.now()),
        },
        value: JSON.stringify({ dispatch_key: `k-${i}` }),
      });
      ids.push(record.id);
      await producer.send({
        topic: topics.dlq(tenant),
        messages: [{ partition: i % PARTITIONS, value: JSON.stringify(record) }],
      });
    }
    // The premise: no consumer group has ever been used on this broker.
    expect(await admin.listTopics()).not.toContain('__consumer_offsets');
  } finally {
    await producer.disconnect();
    await admin.disconnect();
  }
  return { tenant, ids };
}

function expectOneCleanRun(res: CliResult): void {
  expect(res.stderr).not.toMatch(/^\s+at /m);
  expect(res.stderr).not.toContain('Consumer group was not initialized');
  expect({ code: res.code, stderr: res.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
}

test('dlq list on a broker whose first consumer group it is: every dead letter, exit 0, no stack trace', async () => {
  const { tenant, ids } = await freshBrokerWithDeadLetters(4);
  const res = await runCli(
    ['dlq', 'list', '--tenant', tenant, '--json'],
    cliEnv({ KAFKA_BROKERS: broker!.brokers }),
    120_000,
  );
  expectOneCleanRun(res);
  const listed = JSON.parse(res.stdout) as { record: { id: string } }[];
  expect(listed.map((e) => e.record.id).sort()).toEqual([...ids].sort());
});

test('dlq replay --dry-run on a broker whose first consumer group it is: every dead letter, exit 0', async () => {
  const { tenant, ids } = await freshBrokerWithDeadLetters(3);
  const res = await runCli(
    ['dlq', 'replay', '--tenant', tenant, '--dry-run', '--json'],
    cliEnv({ KAFKA_BROKERS: broker!.brokers }),
    120_000,
  );
  expectOneCleanRun(res);
  const summary = JSON.parse(res.stdout) as { examined: number; records: { id: string }[] };
  expect(summary.examined).toBe(ids.length);
  expect(summary.records.map((r) => r.id).sort()).toEqual([...ids].sort());
});

test('dlq replay on a broker whose first consumer group it is: re-publishes every dead letter once, exit 0', async () => {
  const { tenant, ids } = await freshBrokerWithDeadLetters(3);
  const res = await runCli(
    ['dlq', 'replay', '--tenant', tenant, '--json'],
    cliEnv({ KAFKA_BROKERS: broker!.brokers }),
    120_000,
  );
  expectOneCleanRun(res);
  expect(JSON.parse(res.stdout)).toMatchObject({ examined: ids.length, replayed: ids.length });
});
