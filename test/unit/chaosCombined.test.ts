/**
 * The soak's overlapping faults (tools/chaos/combined.ts) and their account: the order in which an outage and a
 * rebalance overlap, a dead letter due while its DLQ refused writes, a record dead-lettered under two ids, a
 * process left unready, and the endurance run's post-GC heap slope (tools/chaos/heapSlope.ts).
 */
import { sourcesWithTwoIds } from '../../tools/chaos/account';
import { type CombinedContext, combinedFault, dueDuringDlqFault } from '../../tools/chaos/combined';
import { type MemSample, heapSlope, leastSquares, postGcPoints } from '../../tools/chaos/heapSlope';
import type { ServerFaults } from '../../tools/chaos/servers';
import { soakVerdict } from '../../tools/chaos/sizes';
import type { SoakResult } from '../../tools/chaos/types';

const passing = (over: Partial<SoakResult>): SoakResult =>
  ({
    profile: 'dev',
    drained: true,
    lost: 0,
    duplicate_runs: 0,
    duplicate_executions: 0,
    malformed: 2,
    dlq_malformed_matched: 2,
    dlq_without_reason: 0,
    dlq_unexpected: 0,
    dedup: { dedup_409: 0, bound: 0, unexplained: 0 },
    dlq_account: { dlq_repeats_unexplained: 0 },
    committed_at_log_end: true,
    executions_running: 0,
    consumer_group_lag: 0,
    kills: { ingester: 1, worker: 1, kafka: 1, temporal: 1, total: 4 },
    dlq_sources_with_two_ids: 0,
    not_ready: [],
    ...over,
  }) as SoakResult;

const combined = {
  temporal_kafka: 1,
  temporal_rebalance: 1,
  dlq_budget: 1,
  dead_letters_due_in_dlq_fault: 3,
};
const lane = {
  doomed: 4,
  dead_lettered: 4,
  runs: 0,
  dlq: 4,
  committed_at_log_end: true,
  consumer_group_lag: 0,
};

describe('the verdict of a soak with overlapping faults', () => {
  test('fails a process left unready after the drain', () => {
    expect(soakVerdict(passing({ not_ready: ['ingester-2'] }))).toEqual([
      'not ready after the drain: ingester-2',
    ]);
  });

  test('fails a record dead-lettered under two ids', () => {
    expect(soakVerdict(passing({ dlq_sources_with_two_ids: 1 }))).toEqual([
      '1 records dead-lettered under two ids',
    ]);
  });

  test('passes only when every kind of overlap happened and the budget lane was dead-lettered in full', () => {
    expect(soakVerdict(passing({ combined_faults: combined, budget_lane: lane }))).toEqual([]);
    expect(
      soakVerdict(passing({ combined_faults: { ...combined, temporal_rebalance: 0 }, budget_lane: lane })),
    ).toEqual(['no rebalance during a Temporal outage']);
    expect(
      soakVerdict(
        passing({
          combined_faults: { ...combined, dead_letters_due_in_dlq_fault: 0 },
          budget_lane: { ...lane, dead_lettered: 3 },
        }),
      ),
    ).toEqual(['no budget ended while the DLQ refused writes', '1 of 4 doomed dispatches not dead-lettered']);
    expect(soakVerdict(passing({ combined_faults: combined }))).toEqual([
      'combined faults without their budget lane, or the other way round',
    ]);
  });
});

describe('the dead-letter ids per source record', () => {
  test('a repeat under the same id is one id; a second id for the same record is counted', () => {
    const seen = [
      { id: 'a', partition: 0, offset: 5 },
      { id: 'a', partition: 0, offset: 5 },
      { id: 'b', partition: 1, offset: 5 },
      { id: 'b2', partition: 1, offset: 5 },
    ];
    expect(sourcesWithTwoIds(seen.slice(0, 3))).toBe(0);
    expect(sourcesWithTwoIds(seen)).toBe(1);
  });

  test('a dead letter counts as due during the DLQ fault only between its start and its end', () => {
    expect(dueDuringDlqFault({ fromMs: 100, toMs: 200, deadLetterDueMs: [99, 100, 150, 200, 201] })).toBe(3);
  });
});

describe('the overlap of a Temporal outage with a rebalance', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  test('the ingester is killed and started again while Temporal is down, and awaited only after it is back', async () => {
    const events: string[] = [];
    const servers = {
      temporalDown: async () => {
        events.push('temporal down');
        return async () => void events.push('temporal up');
      },
    } as unknown as ServerFaults;
    let ready!: () => void;
    const ctx = {
      servers,
      killIngester: async () => {
        events.push('ingester killed');
        return () => {
          events.push('ingester started');
          return new Promise<void>((r) => (ready = () => (events.push('ingester ready'), r())));
        };
      },
      hitKafka: async () => void events.push('kafka hit'),
      settleMs: 15_000,
      downMs: 1000,
      say: () => undefined,
    } as unknown as CombinedContext;
    const done = combinedFault('temporal+rebalance', ctx);
    await jest.advanceTimersByTimeAsync(2_000 + 15_000 + 3_000);
    expect(events).toEqual(['temporal down', 'ingester killed', 'ingester started', 'temporal up']);
    ready();
    const got = await done;
    expect(events.at(-1)).toBe('ingester ready');
    expect(got).toMatchObject({ ingesterKills: 1, kafkaKills: 0 });
    expect(got.temporalDown!.toMs - got.temporalDown!.fromMs).toBe(20_000);
  });

  test('a broker is killed and restarted inside the outage', async () => {
    const events: string[] = [];
    const ctx = {
      servers: {
        temporalDown: async () => {
          events.push('temporal down');
          return async () => void events.push('temporal up');
        },
      },
      hitKafka: async () => void events.push('kafka hit'),
      settleMs: 15_000,
      downMs: 1000,
      say: () => undefined,
    } as unknown as CombinedContext;
    const done = combinedFault('temporal+kafka', ctx);
    await jest.advanceTimersByTimeAsync(2_000);
    expect(await done).toMatchObject({ kafkaKills: 1, ingesterKills: 0 });
    expect(events).toEqual(['temporal down', 'kafka hit', 'temporal up']);
  });
});

describe('the post-GC heap slope', () => {
  const MIB = 2 ** 20;
  /** A sawtooth: the heap grows between major GCs and falls back to `live(records)` at each. */
  const sawtooth = (live: (records: number) => number, n = 400): MemSample[] =>
    Array.from({ length: n }, (_, i) => ({
      records: i * 100,
      heapUsedBytes: (live(i * 100) + (i % 10) * 3) * MIB,
      rssBytes: 100 * MIB,
      majorGcs: Math.floor(i / 10),
    }));

  test('least squares: the slope and no error on an exact line', () => {
    const fit = leastSquares([0, 1, 2, 3].map((x) => ({ x, y: 2 * x + 1 })));
    expect(fit.slope).toBeCloseTo(2);
    expect(fit.stderr).toBeCloseTo(0);
  });

  test('a heap that keeps 6 MiB per 100,000 records has that slope; a steady one has none', () => {
    const leaking = heapSlope(
      postGcPoints(
        sawtooth((r) => 40 + (6 * r) / 100_000),
        20,
      ),
    );
    expect(leaking.slope).toBeCloseTo(6, 1);
    const steady = heapSlope(
      postGcPoints(
        sawtooth(() => 40),
        20,
      ),
    );
    expect(steady.slope).toBeCloseTo(0, 5);
  });

  test('leaves out the warm-up window and windows without a major GC', () => {
    const samples = sawtooth(() => 40).map((s) => ({ ...s, majorGcs: s.records < 20_000 ? 0 : 1 }));
    // Only the window holding the one collection counts; the warm-up's low point would be dropped anyway.
    expect(postGcPoints(samples, 20)).toHaveLength(1);
    expect(
      postGcPoints(
        sawtooth(() => 40),
        20,
      ),
    ).toHaveLength(19);
  });
});
