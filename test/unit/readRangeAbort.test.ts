/**
 * A one-shot read (src/kafka/readRange.ts) whose caller gives up: it stops at its next step, and the consumer
 * still leaves and its throwaway group is still deleted. Kafka is a stand-in that records the calls (the read
 * itself runs on a real broker in it_dlq_original and the dlq tests).
 */
import type { Admin, Kafka } from 'kafkajs';
import { readRange } from '../../src/kafka/readRange';

function standIn() {
  const calls: string[] = [];
  let connected!: () => void;
  const consumer = {
    events: { CRASH: 'consumer.crash', GROUP_JOIN: 'consumer.group_join' },
    on: () => undefined,
    connect: () => {
      calls.push('connect');
      return new Promise<void>((resolve) => (connected = resolve));
    },
    subscribe: async () => void calls.push('subscribe'),
    run: async () => void calls.push('run'),
    disconnect: async () => void calls.push('disconnect'),
  };
  const admin = {
    fetchTopicOffsets: async () => [{ partition: 0, low: '0', high: '1' }],
    deleteGroups: async () => void calls.push('deleteGroups'),
  } as unknown as Admin;
  const kafka = { consumer: () => consumer } as unknown as Kafka;
  return { kafka, admin, calls, connect: () => connected() };
}

const opts = (signal: AbortSignal) => ({
  topic: 't',
  groupId: 'g',
  ranges: [{ partition: 0, start: 0n, end: 1n }],
  commit: false,
  signal,
  onMessage: async () => undefined,
});

test('given up while the consumer connects: no join, and the consumer leaves and its group goes', async () => {
  const { kafka, admin, calls, connect } = standIn();
  const gaveUp = new AbortController();
  const read = readRange(kafka, admin, opts(gaveUp.signal));
  await new Promise((r) => setImmediate(r));
  expect(calls).toEqual(['connect']);
  gaveUp.abort(new Error('attempt out of time'));
  connect();
  await expect(read).rejects.toThrow('attempt out of time');
  expect(calls).toEqual(['connect', 'disconnect', 'deleteGroups']);
});

test('given up before it began: no consumer connects', async () => {
  const { kafka, admin, calls } = standIn();
  const gaveUp = new AbortController();
  gaveUp.abort(new Error('gone'));
  await expect(readRange(kafka, admin, opts(gaveUp.signal))).rejects.toThrow('gone');
  expect(calls).not.toContain('connect');
});

test('given up after the join: the read ends with the caller, not at its timeout', async () => {
  const { kafka, admin, calls, connect } = standIn();
  const gaveUp = new AbortController();
  const read = readRange(kafka, admin, { ...opts(gaveUp.signal), timeoutMs: 60_000 });
  await new Promise((r) => setImmediate(r));
  connect();
  await new Promise((r) => setImmediate(r));
  expect(calls).toEqual(['connect', 'subscribe', 'run']);
  gaveUp.abort(new Error('attempt out of time'));
  await expect(read).rejects.toThrow('attempt out of time');
  expect(calls).toEqual(['connect', 'subscribe', 'run', 'disconnect', 'deleteGroups']);
});
