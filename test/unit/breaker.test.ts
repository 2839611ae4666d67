/**
 * The runs API circuit breaker (docs/design.md "Riding out an outage"): opens after F consecutive outage-class
 * failures, lets one probe out per interval while open, closes on a healthy answer and wakes everyone waiting.
 */
import { type Admission, CircuitBreaker, type CircuitState } from '../../src/activities/breaker';

const outage = (retryAfterMs?: number) => ({
  kind: 'outage' as const,
  httpStatus: 503,
  reason: 'runs API answered 503',
  ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
});

function breaker(failures = 3, probeIntervalMs = 1_000) {
  const states: CircuitState[] = [];
  const b = new CircuitBreaker({ failures, probeIntervalMs, onState: (s) => states.push(s) });
  return { b, states };
}

/** The probe ticket of an admission, failing the test when it is not a probe. */
function probe(a: Admission): number {
  if (typeof a !== 'object') throw new Error(`expected a probe, got ${a}`);
  return a.probe;
}

beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
afterEach(() => jest.useRealTimers());

test('stays closed below the threshold, and a healthy answer resets the count', () => {
  const { b } = breaker(3);
  b.record(outage());
  b.record(outage());
  b.record({ kind: 'healthy' });
  b.record(outage());
  b.record(outage());
  expect(b.state).toBe('closed');
  expect(b.admit()).toBe('call');
});

test('opens after F consecutive outage failures; while open only one probe per interval goes out', () => {
  const { b, states } = breaker(3, 1_000);
  for (let i = 0; i < 3; i++) b.record(outage());
  expect(b.state).toBe('open');
  expect(b.openedAt).toBe(1_000_000);
  expect(b.admit()).toBe('wait');
  jest.advanceTimersByTime(1_000);
  const first = probe(b.admit());
  expect(b.state).toBe('half-open');
  expect(b.admit()).toBe('wait');
  b.record(outage(), first);
  expect(b.state).toBe('open');
  expect(b.admit()).toBe('wait');
  jest.advanceTimersByTime(999);
  expect(b.admit()).toBe('wait');
  jest.advanceTimersByTime(1);
  b.record({ kind: 'healthy' }, probe(b.admit()));
  expect(b.state).toBe('closed');
  expect(b.openedAt).toBeUndefined();
  expect(states).toEqual(['open', 'half-open', 'open', 'half-open', 'closed']);
});

test('a Retry-After longer than the probe interval holds the next probe back, capped by the retry interval', () => {
  const { b } = breaker(1, 1_000);
  b.record(outage(30_000), undefined, 300_000);
  jest.advanceTimersByTime(29_999);
  expect(b.admit()).toBe('wait');
  jest.advanceTimersByTime(1);
  b.record(outage(86_400_000), probe(b.admit()), 5_000);
  jest.advanceTimersByTime(4_999);
  expect(b.admit()).toBe('wait');
  jest.advanceTimersByTime(1);
  expect(typeof b.admit()).toBe('object');
});

test('an abandoned probe hands the turn to the next caller at once', () => {
  const { b } = breaker(1, 1_000);
  b.record(outage());
  jest.advanceTimersByTime(1_000);
  b.record({ kind: 'abandoned' }, probe(b.admit()));
  expect(typeof b.admit()).toBe('object');
});

test("a probe that outlived its turn counts as a plain call and does not take the current probe's turn", () => {
  const { b } = breaker(2, 1_000);
  b.record(outage());
  b.record(outage());
  jest.advanceTimersByTime(1_000);
  const stale = probe(b.admit());
  // Meanwhile a call that was in flight comes back healthy, then the API fails again.
  b.record({ kind: 'healthy' });
  expect(b.state).toBe('closed');
  b.record(outage());
  b.record(outage());
  expect(b.state).toBe('open');
  b.record({ kind: 'healthy' }, stale);
  // Any healthy answer closes it: the stale ticket counts as a plain call.
  expect(b.state).toBe('closed');
  b.record(outage());
  b.record(outage());
  jest.advanceTimersByTime(1_000);
  const current = probe(b.admit());
  b.record(outage(), stale);
  expect(b.admit()).toBe('wait');
  b.record({ kind: 'healthy' }, current);
  expect(b.state).toBe('closed');
});

test('waiters pause until the breaker changes or the probe is due; a limit ends the wait', async () => {
  const { b } = breaker(1, 1_000);
  b.record(outage());
  const signal = new AbortController().signal;
  const paused = b.pause(Date.now() + 60_000, signal, 5_000);
  const limited = b.pause(Date.now() + 500, signal, 5_000);
  await jest.advanceTimersByTimeAsync(500);
  await expect(limited).resolves.toBe('again');
  await expect(b.pause(Date.now(), signal, 5_000)).resolves.toBe('limit');
  await jest.advanceTimersByTimeAsync(500);
  await expect(paused).resolves.toBe('again');
  expect(typeof b.admit()).toBe('object');
  const woken = b.pause(Date.now() + 60_000, signal, 5_000);
  b.record({ kind: 'healthy' });
  await expect(woken).resolves.toBe('again');
  expect(b.admit()).toBe('call');
});

test('an aborted pause rejects with the abort reason; released waiters end at once', async () => {
  const { b } = breaker(1, 1_000);
  b.record(outage());
  const ac = new AbortController();
  const paused = b.pause(Date.now() + 60_000, ac.signal, 5_000);
  ac.abort(new Error('cancelled'));
  await expect(paused).rejects.toThrow('cancelled');
  const other = b.pause(Date.now() + 60_000, new AbortController().signal, 5_000);
  b.releaseWaiters();
  await expect(other).resolves.toBe('limit');
});

test('an open breaker nobody asks through for a minute closes, one failure away from opening again', async () => {
  const { b, states } = breaker(3, 1_000);
  for (let i = 0; i < 3; i++) b.record(outage());
  await jest.advanceTimersByTimeAsync(30_000);
  // A caller that asks (here the probe, failing) keeps it open for another quiet minute.
  b.record(outage(), probe(b.admit()));
  await jest.advanceTimersByTimeAsync(59_000);
  expect(b.state).not.toBe('closed');
  await jest.advanceTimersByTimeAsync(62_000);
  expect(b.state).toBe('closed');
  expect(b.admit()).toBe('call');
  b.record(outage());
  expect(b.state).toBe('open');
  expect(states.filter((s) => s === 'closed')).toHaveLength(1);
});

test("a stale probe's failure neither reopens the breaker nor lets a second probe out beside the current one", () => {
  const { b, states } = breaker(1, 1_000);
  b.record(outage());
  jest.advanceTimersByTime(1_000);
  const stale = probe(b.admit());
  b.record({ kind: 'healthy' });
  b.record(outage());
  jest.advanceTimersByTime(1_000);
  const current = probe(b.admit());
  expect(current).not.toBe(stale);
  // The stale ticket fails while the current probe is still in flight: a plain failure of an open breaker.
  b.record(outage(), stale);
  expect(b.state).toBe('half-open');
  jest.advanceTimersByTime(5_000);
  expect(b.admit()).toBe('wait');
  b.record({ kind: 'healthy' }, current);
  expect(states).toEqual(['open', 'half-open', 'closed', 'open', 'half-open', 'closed']);
});
