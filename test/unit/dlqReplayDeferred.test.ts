/**
 * `dlq replay` never re-publishes a record whose handling its partition's progress could not record (the commit
 * metadata is full): it is deferred to a later run, which finds room once the records before it are handled.
 * Re-published but not recorded, it would be re-published by every later replay. Kafka is replaced by stubs of
 * the range reader; the metadata format is dlqProgress.ts's own.
 */
import type { KafkaMessage } from 'kafkajs';
import { buildDlqRecord, topics } from '../../src/contract';
import type { RangeCommit } from '../../src/kafka/readRange';
import { replayDlq } from '../../src/ops/dlq';
import { MAX_PROGRESS_METADATA_CHARS, PartitionProgress } from '../../src/kafka/dlqProgress';

const messages: KafkaMessage[] = [];
const commits: (RangeCommit | void)[] = [];
jest.mock('../../src/kafka/readRange', () => ({
  watermarks: async () => new Map([[0, { low: 0n, high: 1_000_000n }]]),
  readRange: async (
    _kafka: unknown,
    _admin: unknown,
    opts: { onMessage: (p: number, m: KafkaMessage) => Promise<RangeCommit | void> },
  ) => {
    for (const m of messages) commits.push(await opts.onMessage(0, m));
  },
}));

const TENANT = 'acme';

function deadLetterAt(offset: bigint): KafkaMessage {
  const record = buildDlqRecord({
    id: `dl-${offset}`,
    timestamp: 1_700_000_000_000,
    type: 'dispatch_failure',
    tenant: TENANT,
    dispatchKey: `d-${offset}`,
    error: 'runs API answered 503',
    source: {
      topic: topics.dispatch(TENANT),
      partition: 0,
      offset: String(offset),
      timestamp: '1700000000000',
    },
    value: JSON.stringify({ workflow_ref: 'w@v1', input: {}, goal_id: null, dispatch_key: `d-${offset}` }),
  });
  return {
    offset: String(offset),
    value: Buffer.from(JSON.stringify(record)),
    key: null,
    headers: {},
  } as never;
}

test('a record whose handling the full progress metadata cannot record is deferred, not re-published', async () => {
  // Offsets 1, 3, 5, … handled past a pending offset 0, until one more separate run would not fit.
  const progress = PartitionProgress.fromCommit('0', '', 0n);
  let next = 1n;
  while (progress.canMark(next)) {
    progress.mark(next);
    next += 2n;
  }
  expect(progress.metadata().length).toBeLessThanOrEqual(MAX_PROGRESS_METADATA_CHARS);
  messages.splice(0, messages.length, deadLetterAt(next));
  const sent: unknown[] = [];
  const kafka = {
    producer: () => ({
      connect: async () => undefined,
      disconnect: async () => undefined,
      send: async (r: unknown) => void sent.push(r),
    }),
  };
  const admin = {
    listTopics: async () => [topics.dlq(TENANT)],
    // No other DLQ command is working on the tenant's dead letters.
    describeGroups: async () => ({ groups: [{ members: [] }] }),
    fetchOffsets: async () => [
      {
        topic: topics.dlq(TENANT),
        partitions: [{ partition: 0, offset: '0', metadata: progress.metadata() }],
      },
    ],
  };
  const summary = await replayDlq(kafka as never, admin as never, { tenant: TENANT });
  expect(summary).toMatchObject({ examined: 1, replayed: 0, deferred: 1 });
  expect(sent).toEqual([]);
  // Nothing to commit: the progress stays as it was.
  expect(commits).toEqual([undefined]);

  // With room (the same record where it extends a run already recorded), it is re-published and recorded.
  messages.splice(0, messages.length, deadLetterAt(2n));
  commits.length = 0;
  const again = await replayDlq(kafka as never, admin as never, { tenant: TENANT });
  expect(again).toMatchObject({ examined: 1, replayed: 1, deferred: 0 });
  expect(sent).toHaveLength(1);
  expect(commits[0]).toMatchObject({ offset: 0n });
});
