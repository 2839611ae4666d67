/**
 * What the DLQ backlog gauges cost the brokers. Every ingester refreshes them for every tenant it serves, every
 * POIMEN_DLQ_REFRESH_MS, for months: the age of a partition's oldest pending dead letter is found by bisecting the
 * broker's time index, ~31 ListOffsets in a row. The oldest pending record changes only when it is replayed or
 * discarded, so a refresh that finds the same one asks the broker nothing more about it.
 * The admin here is a stub over an in-memory log (offsets and write times); the real bisection runs on it.
 */
import { dlqBacklog } from '../../src/kafka/dlqBacklog';
import type { KafkaAdmin } from '../../src/kafka/port';

const TOPIC = 'poimen.acme.dispatch.dlq';

/** Three partitions with pending dead letters written at known seconds; nothing committed by the replay group. */
function stubAdmin() {
  const writtenAtMs: Record<number, number[]> = {
    0: [1_700_000_000_000, 1_700_000_100_000],
    1: [1_700_000_050_000],
    2: [1_700_000_200_000, 1_700_000_300_000, 1_700_000_400_000],
  };
  const calls = { byTimestamp: 0 };
  const admin = {
    fetchTopicOffsets: async () =>
      Object.entries(writtenAtMs).map(([p, ts]) => ({
        partition: Number(p),
        low: '0',
        high: String(ts.length),
        offset: String(ts.length),
      })),
    fetchOffsets: async () => [
      {
        topic: TOPIC,
        partitions: [0, 1, 2].map((partition) => ({ partition, offset: '-1', metadata: null })),
      },
    ],
    fetchTopicOffsetsByTimestamp: async (_topic: string, ts: number) => {
      calls.byTimestamp++;
      return Object.entries(writtenAtMs).map(([p, times]) => {
        const i = times.findIndex((t) => t >= ts);
        return { partition: Number(p), offset: String(i < 0 ? -1 : i) };
      });
    },
  };
  return { admin: admin as unknown as KafkaAdmin, calls, writtenAtMs };
}

describe('the DLQ backlog gauges', () => {
  const now = 1_700_000_500_000;

  it('find the oldest pending dead letter’s age', async () => {
    const { admin } = stubAdmin();
    expect(await dlqBacklog(admin, TOPIC, now)).toEqual({ lag: 6, oldestAgeSeconds: 500 });
  });

  it('ask the broker nothing more about an oldest pending record they have dated before', async () => {
    const { admin, calls } = stubAdmin();
    await dlqBacklog(admin, TOPIC, now);
    const first = calls.byTimestamp;
    expect(first).toBeGreaterThan(0);
    // The next refreshes, minutes later, find the same oldest records pending.
    expect(await dlqBacklog(admin, TOPIC, now + 60_000)).toEqual({ lag: 6, oldestAgeSeconds: 560 });
    await dlqBacklog(admin, TOPIC, now + 120_000);
    expect(calls.byTimestamp).toBe(first);
  });

  it('date them anew after a while: a topic made anew has other records at the same offsets', async () => {
    const { admin, calls, writtenAtMs } = stubAdmin();
    await dlqBacklog(admin, TOPIC, now);
    const first = calls.byTimestamp;
    writtenAtMs[0] = [1_700_000_450_000];
    writtenAtMs[1] = [1_700_000_460_000];
    writtenAtMs[2] = [1_700_000_470_000];
    const later = now + 11 * 60_000;
    expect(await dlqBacklog(admin, TOPIC, later)).toEqual({ lag: 3, oldestAgeSeconds: 50 + 11 * 60 });
    expect(calls.byTimestamp).toBeGreaterThan(first);
  });
});
