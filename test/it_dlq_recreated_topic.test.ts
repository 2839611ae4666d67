/**
 * Contract §6 ids on a dispatch topic deleted and made anew while the ingester runs: the new topic's offsets start
 * at 0 again, so a record there can sit at the offset of one dead-lettered before. It is another record: it gets
 * its own dead letter under its own id. And a DLQ topic deleted while the ingester runs (dead letters purged) is
 * declared again by the next dead letter, without a restart. A topic deleted by an operator stops none of the relay's
 * long-lived clients for the other tenants (kafkajs asks about every topic a client has known: the publisher and
 * the source-record reader make a new client when that fails). Real Kafka, real Temporal, the relay's ingester (one
 * process throughout) and its classes.
 */
import { randomUUID } from 'node:crypto';
import { topics } from '../src/contract';
import { buildTestDeadLetter } from '../src/contract/testDeadLetter';
import { createKafka } from '../src/kafka/client';
import { DlqPublisher } from '../src/kafka/dlqPublisher';
import { SourceRecordReader } from '../src/kafka/sourceRecord';
import { ensureTopics, tenantTopicSpecs } from '../src/kafka/topics';
import { createLogger } from '../src/logger';
import { createMetrics } from '../src/metrics';
import { uniqueName, uniqueTenant } from './support/names';
import { testServices } from './support/testEnv';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

let h: Harness | undefined;
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

test('a malformed record at an offset seen before the topic was made anew is dead-lettered, under a new id', async () => {
  h = await createHarness();
  const ingester = await h.startIngester();
  const dispatch = topics.dispatch(h.tenant);
  await h.publish('{"broken": 1', { key: 'before' });
  const [first] = await h.readDlq(1);
  expect(first!.source).toMatchObject({ topic: dispatch, partition: 0, offset: '0' });
  await h.expectCommittedAtLogEnd();

  const admin = h.kafka.admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: [dispatch] });
    await waitFor(async () => !(await admin.listTopics()).includes(dispatch), {
      what: `${dispatch} deleted`,
    });
    const spec = tenantTopicSpecs(h.tenant, { partitions: 1 }).filter((s) => s.topic === dispatch);
    await waitFor(
      async () =>
        await ensureTopics(admin, spec)
          .then(() => true)
          .catch(() => false),
      {
        what: `${dispatch} made anew`,
      },
    );
  } finally {
    await admin.disconnect();
  }
  // The group's offset went with the old topic: the commit seen below is of the new record.
  let seen = '';
  await waitFor(
    async () => {
      const now = await h!.offsets();
      seen = JSON.stringify(now);
      // -1 (none), or -2 (kafkajs's "earliest") when the ingester's consumer wrote its start position.
      return now.every((p) => p.high === 0 && p.committed < 0);
    },
    { what: 'the new topic empty, without a committed offset' },
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; last seen ${seen}`);
  });
  await h.publish('{"broken": 2', { key: 'after' });
  // The ingester consumed the new topic's record (offset 0 again) and committed it.
  await waitFor(async () => (await h!.offsets()).every((p) => p.high === 1 && p.committed === 1), {
    timeoutMs: 90_000,
    what: 'the new topic’s record consumed and committed',
  });

  const letters = await h.readDlq(2, 20_000);
  expect(letters.map((r) => [r.source.offset, r.source.key, r.payload])).toEqual([
    ['0', 'before', '{"broken": 1'],
    ['0', 'after', '{"broken": 2'],
  ]);
  expect(letters[1]!.id).not.toBe(letters[0]!.id);
  // One ingester process throughout: its publisher remembered the first id when the second record came.
  expect(ingester.child.exitCode).toBeNull();
});

test('a DLQ topic deleted while the ingester runs is declared again at the next dead letter', async () => {
  h = await createHarness();
  const ingester = await h.startIngester();
  const dlq = topics.dlq(h.tenant);
  await h.publish('{"broken": 1', { key: 'before' });
  await h.readDlq(1);
  await h.expectCommittedAtLogEnd();

  // An operator purges the dead letters by deleting the topic (its publisher knew it from the first).
  const admin = h.kafka.admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: [dlq] });
    await waitFor(async () => !(await admin.listTopics()).includes(dlq), { what: `${dlq} deleted` });
  } finally {
    await admin.disconnect();
  }
  await h.publish('{"broken": 2', { key: 'after' });
  // The publisher declared the topic again and the record was committed past: nothing waits for a restart.
  await h.expectCommittedAtLogEnd(90_000);
  const letters = await h.readDlq(1, 20_000);
  expect(letters.map((r) => [r.source.key, r.payload])).toEqual([['after', '{"broken": 2']]);
  expect(ingester.child.exitCode).toBeNull();
});

const quiet = createLogger('it-dlq-recreated', 'silent');

function relayKafka() {
  return createKafka(
    { brokers: testServices().kafkaBrokers, clientId: uniqueName('it-recreated'), groupId: '-', ssl: false },
    quiet,
  );
}

/** Deletes the topics as an operator does, from a client of its own. */
async function operatorDeletes(names: string[]): Promise<void> {
  const admin = relayKafka().admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: names });
    await waitFor(async () => !(await admin.listTopics()).some((t) => names.includes(t)), {
      what: `${names.join(', ')} deleted`,
    });
  } finally {
    await admin.disconnect();
  }
}

test("a tenant's DLQ topic deleted by an operator: every tenant's dead letters still go out, its own too", async () => {
  const [a, b, c] = [uniqueTenant(), uniqueTenant(), uniqueTenant()];
  const dlq = new DlqPublisher(relayKafka(), createMetrics({ defaultMetrics: false }), quiet);
  const publish = (tenant: string) =>
    dlq
      .publish(
        buildTestDeadLetter({ id: randomUUID(), timestamp: Date.now(), tenant, index: 1, count: 1 }),
        null,
        {
          signal: AbortSignal.timeout(30_000),
        },
      )
      .then(
        () => 'ok',
        (e: Error) => e.message,
      );
  try {
    expect([await publish(a), await publish(b)]).toEqual(['ok', 'ok']);
    await operatorDeletes([topics.dlq(a)]);
    // A new tenant, one the publisher wrote to before, and the tenant whose topic went (declared again).
    expect([await publish(c), await publish(b), await publish(a)]).toEqual(['ok', 'ok', 'ok']);
  } finally {
    await dlq.close();
    await operatorDeletes([topics.dlq(a), topics.dlq(b), topics.dlq(c)]).catch(() => undefined);
  }
});

test("a tenant's dispatch topic deleted by an operator: the worker still reads the others' source records", async () => {
  const [a, b] = [uniqueTenant(), uniqueTenant()];
  const kafka = relayKafka();
  const admin = kafka.admin();
  await admin.connect();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const reader = new SourceRecordReader(relayKafka(), 30_000);
  try {
    for (const t of [a, b]) {
      await ensureTopics(
        admin,
        tenantTopicSpecs(t, { partitions: 1 }).filter((s) => s.topic === topics.dispatch(t)),
      );
      await producer.send({ topic: topics.dispatch(t), acks: -1, messages: [{ key: t, value: `of ${t}` }] });
    }
    const read = async (t: string) =>
      (
        await reader.read(
          { topic: topics.dispatch(t), partition: 0, offset: '0' },
          new AbortController().signal,
        )
      )?.value?.toString();
    expect([await read(a), await read(b)]).toEqual([`of ${a}`, `of ${b}`]);
    await operatorDeletes([topics.dispatch(b)]);
    expect(await read(a)).toBe(`of ${a}`);
  } finally {
    await reader.close();
    await producer.disconnect();
    await admin.disconnect();
    await operatorDeletes([topics.dispatch(a), topics.dispatch(b)]).catch(() => undefined);
  }
});
