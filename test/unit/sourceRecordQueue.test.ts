/**
 * The source-record reader's turns (src/kafka/sourceRecord.ts): a few reads at a time, and a read whose caller has
 * given up takes no turn. Kafka is a stand-in here: these cases are about the queue, not about Kafka (the reads
 * themselves run on a real broker in it_dlq_original and it_dead_letter_burst).
 */
import type { Kafka } from 'kafkajs';
import { SourceRecordReader } from '../../src/kafka/sourceRecord';

/** An admin whose offset lookups wait until released; each lookup's topic is recorded. */
function standIn() {
  const asked: string[] = [];
  const releases: (() => void)[] = [];
  const admin = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    fetchTopicOffsets: (topic: string) => {
      asked.push(topic);
      // An empty partition: the read ends without a consumer.
      return new Promise((resolve) => releases.push(() => resolve([{ partition: 0, low: '0', high: '0' }])));
    },
  };
  const kafka = { admin: () => admin } as unknown as Kafka;
  return {
    reader: new SourceRecordReader(kafka, 1_000),
    asked,
    releaseAll: () => releases.splice(0).forEach((r) => r()),
  };
}

const at = (topic: string) => ({ topic, partition: 0, offset: '0' });
const settle = () => new Promise((r) => setImmediate(r));

test('a read whose caller gives up while it waits for its turn leaves the queue and never runs', async () => {
  const { reader, asked, releaseAll } = standIn();
  const running = ['a', 'b', 'c', 'd'].map((t) => reader.read(at(t), new AbortController().signal));
  const gaveUp = new AbortController();
  const waiting = reader.read(at('gave-up'), gaveUp.signal);
  const next = reader.read(at('next'), new AbortController().signal);
  await settle();
  expect(asked).toEqual(['a', 'b', 'c', 'd']);
  gaveUp.abort(new Error('attempt out of time'));
  await expect(waiting).rejects.toThrow('attempt out of time');
  releaseAll();
  await Promise.all(running);
  await settle();
  // The turn the one that gave up would have had goes to the next in line.
  expect(asked).toEqual(['a', 'b', 'c', 'd', 'next']);
  releaseAll();
  await expect(next).resolves.toBeUndefined();
  await reader.close();
});

test('a running read whose caller gives up answers at once, and keeps its turn until its work ends', async () => {
  const { reader, asked, releaseAll } = standIn();
  const gaveUp = new AbortController();
  const first = reader.read(at('first'), gaveUp.signal);
  const others = ['b', 'c', 'd'].map((t) => reader.read(at(t), new AbortController().signal));
  const fifth = reader.read(at('fifth'), new AbortController().signal);
  await settle();
  gaveUp.abort(new Error('attempt out of time'));
  await expect(first).rejects.toThrow('attempt out of time');
  await settle();
  // Its lookup is still on the wire: four reads are still running, and the fifth still waits.
  expect(asked).toEqual(['first', 'b', 'c', 'd']);
  releaseAll();
  await Promise.all(others);
  await settle();
  expect(asked).toEqual(['first', 'b', 'c', 'd', 'fifth']);
  releaseAll();
  await expect(fifth).resolves.toBeUndefined();
  await reader.close();
});

test('a read asked for with a signal already aborted takes no turn', async () => {
  const { reader, asked } = standIn();
  const gone = new AbortController();
  gone.abort(new Error('gone'));
  await expect(reader.read(at('late'), gone.signal)).rejects.toThrow('gone');
  expect(asked).toEqual([]);
  await reader.close();
});
