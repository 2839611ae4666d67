/**
 * `dlq list` (src/ops/dlqList.ts, contract §8): the newest `limit` dead letters of a tenant, at most `limit` read
 * per partition from its end, merged oldest first by the record's timestamp. Kafka is replaced by stubs of the
 * watermarks and of the dead-letter reader; the records are the contract's own.
 */
import { buildDlqRecord, topics } from '../../src/contract';
import { NotFoundError } from '../../src/errors';
import type { DeadLetter } from '../../src/kafka/dlqReader';
import type { PartitionRange } from '../../src/kafka/readRange';
import type { KafkaAdmin, KafkaClient } from '../../src/kafka/port';
import { listDlq } from '../../src/ops/dlqList';

const TENANT = 'acme';
const TOPIC = topics.dlq(TENANT);

let marks = new Map<number, { low: bigint; high: bigint }>();
let letters: DeadLetter[] = [];
const reads: { topic: string; ranges: PartitionRange[]; groupPrefix: string | undefined }[] = [];

jest.mock('../../src/kafka/readRange', () => ({ watermarks: async () => marks }));
jest.mock('../../src/kafka/dlqReader', () => ({
  readDeadLetters: async (
    _kafka: unknown,
    _admin: unknown,
    topic: string,
    opts: { ranges: PartitionRange[]; groupPrefix?: string },
  ) => {
    reads.push({ topic, ranges: opts.ranges, groupPrefix: opts.groupPrefix });
    return letters;
  },
}));

const admin = (topicNames: string[]) => ({ listTopics: async () => topicNames }) as unknown as KafkaAdmin;
const kafka = {} as KafkaClient;

function letter(partition: number, offset: number, atMs: number | undefined): DeadLetter {
  const record =
    atMs === undefined
      ? undefined
      : buildDlqRecord({
          id: `dl-${partition}-${offset}`,
          timestamp: atMs,
          type: 'dispatch_failure',
          tenant: TENANT,
          dispatchKey: `d-${partition}-${offset}`,
          error: 'runs API answered 503',
          source: {
            topic: topics.dispatch(TENANT),
            partition,
            offset: String(offset),
            timestamp: String(atMs),
          },
          value: '{}',
        });
  return {
    partition,
    offset: String(offset),
    key: Buffer.from('k'),
    record,
    test: false,
    ...(record ? {} : { raw: 'not json' }),
  };
}

beforeEach(() => {
  reads.length = 0;
});

test('reads at most `limit` records per partition, from the end of each, never below its log start', async () => {
  marks = new Map([
    [0, { low: 0n, high: 10n }],
    [1, { low: 8n, high: 11n }],
    [2, { low: 4n, high: 4n }],
  ]);
  letters = [];
  await listDlq(kafka, admin([TOPIC]), TENANT, 3);
  expect(reads).toEqual([
    {
      topic: TOPIC,
      groupPrefix: 'poimen-relay-dlq-list',
      ranges: [
        { partition: 0, start: 7n, end: 10n },
        { partition: 1, start: 8n, end: 11n },
        { partition: 2, start: 4n, end: 4n },
      ],
    },
  ]);
  // Exactly `limit` records above the log start: the range starts at the log start.
  marks = new Map([[0, { low: 5n, high: 8n }]]);
  await listDlq(kafka, admin([TOPIC]), TENANT, 3);
  expect(reads[1]!.ranges).toEqual([{ partition: 0, start: 5n, end: 8n }]);
});

test('merges the partitions oldest first by the record’s timestamp and keeps the newest `limit`', async () => {
  marks = new Map([
    [0, { low: 0n, high: 3n }],
    [1, { low: 0n, high: 2n }],
  ]);
  const t = 1_700_000_000_000;
  letters = [
    letter(0, 0, t + 10),
    letter(0, 1, t + 30),
    letter(0, 2, t + 50),
    letter(1, 0, t + 20),
    letter(1, 1, t + 40),
  ];
  const listed = await listDlq(kafka, admin([TOPIC]), TENANT, 4);
  expect(listed.map((e) => `${e.partition}/${e.offset}`)).toEqual(['1/0', '0/1', '1/1', '0/2']);
  // The Kafka key is the reader's, not part of an entry.
  expect(listed.every((e) => !('key' in e))).toBe(true);
  expect(listed[0]).toEqual({ partition: 1, offset: '0', record: letters[3]!.record, test: false });
});

test('a value that is not a DLQ record sorts as the oldest, raw value kept', async () => {
  marks = new Map([[0, { low: 0n, high: 3n }]]);
  const t = 1_700_000_000_000;
  letters = [letter(0, 0, t), letter(0, 1, undefined), letter(0, 2, t + 5)];
  const listed = await listDlq(kafka, admin([TOPIC]), TENANT, 2);
  expect(listed.map((e) => e.offset)).toEqual(['0', '2']);
  const all = await listDlq(kafka, admin([TOPIC]), TENANT, 3);
  expect(all[0]).toEqual({ partition: 0, offset: '1', record: undefined, test: false, raw: 'not json' });
});

test('a tenant without a DLQ topic is "not found", naming the topic and how to declare it', async () => {
  const listing = listDlq(kafka, admin(['poimen.other.dispatch.dlq']), TENANT, 5);
  await expect(listing).rejects.toThrow(NotFoundError);
  await expect(listing).rejects.toThrow(
    `topic ${TOPIC} does not exist (declare it with: poimen-relay topics apply)`,
  );
  expect(reads).toEqual([]);
});
