/**
 * The soak's exactly-once account must fail a relay that repeats itself, which "one 201 per key" cannot (the
 * API double answers 201 once per key whatever the relay sends).
 */
import { type ApiCall, dedupAccount, dlqAccount } from '../../tools/chaos/account';

const call = (dispatchKey: string, answer: ApiCall['answer'], receivedAtMs: number): ApiCall => ({
  dispatchKey,
  answer,
  receivedAtMs,
});

describe('the soak’s 409 account', () => {
  test('a relay that POSTs every dispatch twice is caught, though every key has exactly one 201', () => {
    const calls = ['a', 'b', 'c'].flatMap((k, i) => [call(k, 201, 1000 * i), call(k, 409, 1000 * i + 10)]);
    const acc = dedupAccount(calls, new Map(), []);
    expect(acc.dedup_409).toBe(3);
    expect(acc.bound).toBe(0);
    expect(acc.unexplained).toBe(3);
    expect(acc.unexplained_keys).toEqual(['a', 'b', 'c']);
  });

  test('a 409 after an answer dropped past admission, or after an answer near a worker kill, is explained', () => {
    const calls = [
      call('dropped', 'dropped', 100),
      call('dropped', 409, 400),
      call('killed', 201, 5_000),
      call('killed', 409, 20_000),
      call('clean', 201, 30_000),
    ];
    const acc = dedupAccount(calls, new Map([['dropped', 1]]), [
      { fromMs: 3_000, toMs: 6_000, cause: 'worker_kill' },
    ]);
    expect(acc).toMatchObject({
      dedup_409: 2,
      dropped_after_admit: 1,
      answered_in_fault_windows: 1,
      unexplained: 0,
    });
  });

  test('a fault on one key does not explain a 409 on another', () => {
    const calls = [call('x', 201, 5_000), call('y', 201, 50_000), call('y', 409, 50_010)];
    const acc = dedupAccount(calls, new Map(), [{ fromMs: 4_000, toMs: 6_000, cause: 'temporal_outage' }]);
    expect(acc.bound).toBe(1);
    expect(acc.unexplained_keys).toEqual(['y']);
  });
});

describe('the soak’s dead-letter account', () => {
  test('a repeat is allowed only where a rewind covered its source offset, once per rewind', () => {
    const seen = [
      { id: 'a', partition: 0, offset: 5 },
      { id: 'a', partition: 0, offset: 5 },
      { id: 'b', partition: 1, offset: 5 },
      { id: 'b', partition: 1, offset: 5 },
      { id: 'c', partition: 0, offset: 50 },
    ];
    const acc = dlqAccount(seen, [{ partition: 0, from: 3, to: 10 }]);
    expect(acc).toEqual({ dlq_ids: 3, dlq_repeats: 2, dlq_max_copies_per_id: 2, dlq_repeats_unexplained: 1 });
    expect(dlqAccount(seen.slice(0, 3), [{ partition: 0, from: 3, to: 10 }]).dlq_repeats_unexplained).toBe(0);
  });
});
