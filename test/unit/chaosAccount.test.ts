/**
 * The soak's exactly-once account must fail a relay that repeats itself, which "one 201 per key" cannot (the
 * API double answers 201 once per key whatever the relay sends).
 */
import { type ApiCall, dedupAccount, dlqAccount } from '../../tools/chaos/account';
import { attemptTimeoutsIn } from '../../tools/chaos/attemptTimeouts';

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

  test('a 409 after the client gave up on an attempt the API had admitted is explained, for that key only', () => {
    // The API admitted 'slow' at 10 s; the worker's 5 s attempt timeout fired at 15.5 s, so its retry got 409.
    const calls = [call('slow', 201, 10_000), call('slow', 409, 16_000), call('other', 201, 10_000)];
    const timeouts = [{ dispatchKey: 'slow', atMs: 15_500 }];
    const acc = dedupAccount(calls, new Map(), [], timeouts);
    expect(acc).toMatchObject({ dedup_409: 1, client_timeouts_after_admit: 1, bound: 1, unexplained: 0 });
    // The same timeout does not explain a 409 on another key, nor a second 409 on its own.
    const twice = dedupAccount(
      [...calls, call('slow', 409, 17_000), call('other', 409, 17_000)],
      new Map(),
      [],
      timeouts,
    );
    expect(twice.unexplained_keys).toEqual(['slow', 'other']);
    expect(twice.unexplained).toBe(2);
  });

  test('a client timeout explains nothing when the call it abandoned got no 201 or 409', () => {
    // Admitted at 10 s, retried at 11 s (a relay repeating itself), a timeout logged much later on another attempt.
    const calls = [call('k', 201, 10_000), call('k', 409, 11_000), call('k', 503, 40_000)];
    const acc = dedupAccount(calls, new Map(), [], [{ dispatchKey: 'k', atMs: 45_000 }]);
    expect(acc).toMatchObject({ client_timeouts_after_admit: 0, unexplained: 1 });
  });

  test('a timeout logged late by a stalled worker still explains the 409 after the answer it abandoned', () => {
    // The answer came at 10 s; the worker's event loop stalled and logged its 5 s timeout only at 19 s.
    const calls = [call('stalled', 201, 10_000), call('stalled', 409, 20_000)];
    const acc = dedupAccount(calls, new Map(), [], [{ dispatchKey: 'stalled', atMs: 19_000 }]);
    expect(acc).toMatchObject({ client_timeouts_after_admit: 1, unexplained: 0 });
  });

  test('a call a fault window already explains is not explained a second time by a timeout', () => {
    // Admitted at 10 s inside a worker-kill window (that explains one 409), abandoned by a timeout logged at 25 s:
    // both point at the same lost answer, so the second 409 at 40 s has no cause.
    const calls = [call('k', 201, 10_000), call('k', 409, 30_000), call('k', 409, 40_000)];
    const windows = [{ fromMs: 9_000, toMs: 12_000, cause: 'worker_kill' as const }];
    const acc = dedupAccount(calls, new Map(), windows, [{ dispatchKey: 'k', atMs: 25_000 }]);
    expect(acc).toMatchObject({
      answered_in_fault_windows: 1,
      client_timeouts_after_admit: 0,
      unexplained: 1,
    });
  });

  test('the worker logs are read for attempt timeouts, by key and time', () => {
    const lines = [
      {
        level: 'warn',
        time: 15_500,
        dispatch_key: 'slow',
        code: 'timeout',
        msg: 'runs API attempt failed; Temporal will retry',
      },
      {
        level: 'warn',
        time: 16_000,
        dispatch_key: 'down',
        code: 'error',
        msg: 'runs API attempt failed; Temporal will retry',
      },
      { level: 'info', time: 17_000, dispatch_key: 'ok', code: '201', msg: 'run admitted' },
    ].map((l) => JSON.stringify(l));
    expect(attemptTimeoutsIn([...lines, 'not json {', ''].join('\n'))).toEqual([
      { dispatchKey: 'slow', atMs: 15_500 },
    ]);
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
