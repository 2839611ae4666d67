/**
 * The DLQ backlog gauges' figures (src/kafka/dlqBacklog.ts, contract §7): records not yet handled by the replay
 * group, and the age of the oldest of them across partitions, dated by the broker's time index and reused for
 * ten minutes while it is the same record. The admin is a stub over an in-memory log (write times per offset).
 */
import { dlqBacklog } from '../../src/kafka/dlqBacklog';
import type { KafkaAdmin } from '../../src/kafka/port';

const TOPIC = 'poimen.acme.dispatch.dlq';
const T = 1_700_000_000_000;

function stubAdmin(writtenAtMs: Record<number, number[]>, committed: Record<number, string> = {}) {
  const calls = { byTimestamp: 0 };
  const state = { undated: false };
  const admin = {
    fetchTopicOffsets: async () =>
      Object.entries(writtenAtMs).map(([p, ts]) => ({
        partition: Number(p),
        low: '0',
        high: String(ts.length),
      })),
    fetchOffsets: async () => [
      {
        topic: TOPIC,
        partitions: Object.keys(writtenAtMs).map((p) => ({
          partition: Number(p),
          offset: committed[Number(p)] ?? '-1',
          metadata: null,
        })),
      },
    ],
    fetchTopicOffsetsByTimestamp: async (_topic: string, ts: number) => {
      calls.byTimestamp++;
      return Object.entries(writtenAtMs).map(([p, times]) => {
        const i = state.undated ? -1 : times.findIndex((t) => t >= ts);
        return { partition: Number(p), offset: String(i < 0 ? -1 : i) };
      });
    },
  };
  return { admin: admin as unknown as KafkaAdmin, calls, state };
}

test('the oldest pending record may be in any partition', async () => {
  const { admin } = stubAdmin({ 0: [T + 300_000], 1: [T + 200_000], 2: [T, T + 1_000] });
  expect(await dlqBacklog(admin, TOPIC, T + 500_000)).toEqual({ lag: 4, oldestAgeSeconds: 500 });
});

test('a partition with nothing pending adds no lag and is not dated', async () => {
  const { admin, calls } = stubAdmin({ 0: [T, T + 1_000], 1: [T + 5_000] }, { 0: '2', 1: '1' });
  expect(await dlqBacklog(admin, TOPIC, T + 10_000)).toEqual({ lag: 0, oldestAgeSeconds: 0 });
  expect(calls.byTimestamp).toBe(0);
});

test('a dating is reused for less than ten minutes, and only while the same record is the oldest', async () => {
  const log = { 0: [T, T + 100_000] };
  const { admin, calls } = stubAdmin(log, { 0: '0' });
  await dlqBacklog(admin, TOPIC, T + 1_000_000);
  const once = calls.byTimestamp;
  await dlqBacklog(admin, TOPIC, T + 1_000_000 + 10 * 60_000 - 1);
  expect(calls.byTimestamp).toBe(once);
  // Ten minutes on: dated anew.
  await dlqBacklog(admin, TOPIC, T + 1_000_000 + 10 * 60_000);
  expect(calls.byTimestamp).toBe(2 * once);
  // The oldest replayed: the next one is dated, not given the old one's age.
  const { admin: moved } = stubAdmin(log, { 0: '0' });
  await dlqBacklog(moved, TOPIC, T + 1_000_000);
  const after = stubAdmin(log, { 0: '1' });
  Object.assign(moved, { fetchOffsets: after.admin.fetchOffsets });
  expect(await dlqBacklog(moved, TOPIC, T + 1_000_000)).toEqual({ lag: 1, oldestAgeSeconds: 900 });
});

test('a record the time index cannot date is asked about again at the next refresh', async () => {
  const { admin, calls, state } = stubAdmin({ 0: [T] });
  state.undated = true;
  expect(await dlqBacklog(admin, TOPIC, T + 50_000)).toEqual({ lag: 1, oldestAgeSeconds: 0 });
  const asked = calls.byTimestamp;
  expect(asked).toBeGreaterThan(0);
  state.undated = false;
  expect(await dlqBacklog(admin, TOPIC, T + 50_000)).toEqual({ lag: 1, oldestAgeSeconds: 50 });
  expect(calls.byTimestamp).toBeGreaterThan(asked);
});
