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
    releaseOldest: () => releases.shift()?.(),
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

test('turns go newest first, and never more than four reads run, also after turns were handed over', async () => {
  const { reader, asked, releaseAll } = standIn();
  const open = () => new AbortController().signal;
  const first = ['a', 'b', 'c', 'd'].map((t) => reader.read(at(t), open()));
  const queued = ['e', 'f', 'g'].map((t) => reader.read(at(t), open()));
  await settle();
  expect(asked).toEqual(['a', 'b', 'c', 'd']);
  releaseAll();
  await Promise.all(first);
  await settle();
  // Three turns handed over, newest first; one left free.
  expect(asked.slice(4)).toEqual(['g', 'f', 'e']);
  const later = ['h', 'i'].map((t) => reader.read(at(t), open()));
  await settle();
  expect(asked.slice(7)).toEqual(['h']);
  releaseAll();
  await Promise.all([...queued, later[0]]);
  await settle();
  expect(asked.slice(8)).toEqual(['i']);
  releaseAll();
  await later[1];
  // All ended: four turns free again.
  const again = ['j', 'k', 'l', 'm', 'n'].map((t) => reader.read(at(t), open()));
  await settle();
  expect(asked.slice(9)).toEqual(['j', 'k', 'l', 'm']);
  releaseAll();
  await settle();
  releaseAll();
  await Promise.all(again);
  await reader.close();
});

test('a read given up after it was handed its turn leaves the others queued', async () => {
  const { reader, asked, releaseAll, releaseOldest } = standIn();
  const open = () => new AbortController().signal;
  const running = ['a', 'b', 'c', 'd'].map((t) => reader.read(at(t), open()));
  const oldest = reader.read(at('oldest'), open());
  const older = reader.read(at('older'), open());
  const handedOver = new AbortController();
  const newer = reader.read(at('newer'), handedOver.signal);
  await settle();
  releaseOldest();
  await running[0];
  await settle();
  expect(asked.slice(4)).toEqual(['newer']);
  handedOver.abort(new Error('attempt out of time'));
  await expect(newer).rejects.toThrow('attempt out of time');
  releaseAll();
  await Promise.all(running);
  await settle();
  // Both still queued got their turns: the give-up took nobody else out of the queue.
  expect(asked.slice(5).sort()).toEqual(['older', 'oldest']);
  releaseAll();
  await expect(Promise.all([oldest, older])).resolves.toEqual([undefined, undefined]);
  await reader.close();
});

test('a read given up in the same tick it asked takes no turn and leaves it free, with no stray failure', async () => {
  const { reader, asked, releaseAll } = standIn();
  const gaveUp = new AbortController();
  const read = reader.read(at('same-tick'), gaveUp.signal);
  gaveUp.abort(new Error('cancelled'));
  await expect(read).rejects.toThrow('cancelled');
  const open = () => new AbortController().signal;
  const after = ['a', 'b', 'c', 'd'].map((t) => reader.read(at(t), open()));
  await settle();
  expect(asked).toEqual(['a', 'b', 'c', 'd']);
  releaseAll();
  await Promise.all(after);
  await reader.close();
});
