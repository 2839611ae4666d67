/**
 * Contract §6 ids on a dispatch topic deleted and made anew while the ingester runs: the new topic's offsets start
 * at 0 again, so a record there can sit at the offset of one dead-lettered before. It is another record: it gets
 * its own dead letter under its own id. And a DLQ topic deleted while the ingester runs (dead letters purged) is
 * declared again by the next dead letter, without a restart. Real Kafka, real Temporal, the relay's ingester (one
 * process throughout).
 */
import { topics } from '../src/contract';
import { ensureTopics, tenantTopicSpecs } from '../src/kafka/topics';
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
