/**
 * Fetches of transaction markers alone (markerBatches.ts): kafkajs reports them by its END_BATCH_PROCESS event
 * with no record handed over; the ingester commits past each, only while the partition is its own, one at a
 * time per partition. The consumer is a stub with kafkajs's event names; real Kafka is it_transactional_producers.
 */
import { EventEmitter } from 'node:events';
import type { KafkaConsumer } from '../../src/kafka/port';
import { MarkerBatches } from '../../src/ingest/markerBatches';
import { createLogger } from '../../src/logger';

const END = 'consumer.end_batch_process';

function stubConsumer() {
  const emitter = new EventEmitter();
  const commits: { topic: string; partition: number; offset: string }[] = [];
  let release: (() => void) | undefined;
  const consumer = {
    events: { END_BATCH_PROCESS: END },
    on: (event: string, listener: (e: unknown) => void) => emitter.on(event, listener),
    /** While `hold` is set, each commit stays in flight until released. */
    hold: false,
    commitOffsets: jest.fn(async (offsets: { topic: string; partition: number; offset: string }[]) => {
      commits.push(...offsets);
      if (consumer.hold) await new Promise<void>((r) => (release = r));
    }),
  };
  const batchEnded = (p: {
    partition?: number;
    batchSize: number;
    firstOffset: string | null;
    lastOffset: string;
  }) => emitter.emit(END, { payload: { topic: 'poimen.acme.dispatch', partition: 0, ...p } });
  return { consumer, commits, batchEnded, release: () => release?.() };
}

const tick = () => new Promise((r) => setImmediate(r));

test('a fetch that handed no record over (markers, aborted records) is committed past its last offset', async () => {
  const s = stubConsumer();
  const markers = new MarkerBatches(createLogger('test', 'silent'));
  markers.watch(s.consumer as unknown as KafkaConsumer, () => true);
  s.batchEnded({ batchSize: 0, firstOffset: '8', lastOffset: '10' });
  await markers.settled();
  expect(s.commits).toEqual([{ topic: 'poimen.acme.dispatch', partition: 0, offset: '11' }]);
});

test('a batch handed over, a fetch with nothing at or after its offset, or a partition not ours: no commit', async () => {
  const s = stubConsumer();
  const markers = new MarkerBatches(createLogger('test', 'silent'));
  markers.watch(s.consumer as unknown as KafkaConsumer, (_t, partition) => partition === 0);
  s.batchEnded({ batchSize: 2, firstOffset: '3', lastOffset: '5' });
  s.batchEnded({ batchSize: 0, firstOffset: null, lastOffset: '9' });
  s.batchEnded({ partition: 1, batchSize: 0, firstOffset: '8', lastOffset: '10' });
  await markers.settled();
  expect(s.commits).toEqual([]);
});

test('a later batch of the partition waits for its marker commit in flight; other partitions do not', async () => {
  const s = stubConsumer();
  s.consumer.hold = true;
  const markers = new MarkerBatches(createLogger('test', 'silent'));
  markers.watch(s.consumer as unknown as KafkaConsumer, () => true);
  s.batchEnded({ batchSize: 0, firstOffset: '4', lastOffset: '4' });
  await tick();
  let waited = false;
  const later = markers.before('poimen.acme.dispatch', 0).then(() => (waited = true));
  await markers.before('poimen.acme.dispatch', 1);
  await tick();
  expect(waited).toBe(false);
  s.release();
  await later;
  expect(s.commits.map((c) => c.offset)).toEqual(['5']);
});

test('a failed marker commit is logged and dropped: the partition’s next batch commits past it', async () => {
  const s = stubConsumer();
  s.consumer.commitOffsets.mockRejectedValueOnce(new Error('coordinator gone'));
  const markers = new MarkerBatches(createLogger('test', 'silent'));
  markers.watch(s.consumer as unknown as KafkaConsumer, () => true);
  s.batchEnded({ batchSize: 0, firstOffset: '4', lastOffset: '6' });
  await expect(markers.before('poimen.acme.dispatch', 0)).resolves.toBeUndefined();
  expect(s.consumer.commitOffsets).toHaveBeenCalledTimes(1);
});
