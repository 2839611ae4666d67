/**
 * The runs API circuit breaker (docs/design.md "Riding out an outage"): opens after F consecutive outage-class
 * failures, lets one probe out per interval while open, closes on a healthy answer and wakes everyone waiting.
 */
import { CircuitBreaker, type CircuitState } from '../../src/activities/breaker';

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

beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
afterEach(() => jest.useRealTimers());

test('stays closed below the threshold, and a healthy answer resets the count', () => {
  const { b } = breaker(3);
  b.record(outage(), false);
  b.record(outage(), false);
  b.record({ kind: 'healthy' }, false);
  b.record(outage(), false);
  b.record(outage(), false);
  expect(b.state).toBe('closed');
  expect(b.admit()).toBe('call');
});

test('opens after F consecutive outage failures; while open only one probe per interval goes out', () => {
  const { b, states } = breaker(3, 1_000);
  for (let i = 0; i < 3; i++) b.record(outage(), false);
  expect(b.state).toBe('open');
  expect(b.openedAt).toBe(1_000_000);
  expect(b.admit()).toBe('wait');
  jest.advanceTimersByTime(1_000);
  expect(b.admit()).toBe('probe');
  expect(b.state).toBe('half-open');
  expect(b.admit()).toBe('wait');
  b.record(outage(), true);
  expect(b.state).toBe('open');
  expect(b.admit()).toBe('wait');
  jest.advanceTimersByTime(999);
  expect(b.admit()).toBe('wait');
  jest.advanceTimersByTime(1);
  expect(b.admit()).toBe('probe');
  b.record({ kind: 'healthy' }, true);
  expect(b.state).toBe('closed');
  expect(b.openedAt).toBeUndefined();
  expect(states).toEqual(['open', 'half-open', 'open', 'half-open', 'closed']);
});

test('a Retry-After longer than the probe interval holds the next probe back, capped at 5 minutes', () => {
  const { b } = breaker(1, 1_000);
  b.record(outage(30_000), false);
  jest.advanceTimersByTime(29_999);
  expect(b.admit()).toBe('wait');
  jest.advanceTimersByTime(1);
  expect(b.admit()).toBe('probe');
  b.record(outage(86_400_000), true);
  jest.advanceTimersByTime(5 * 60_000 - 1);
  expect(b.admit()).toBe('wait');
  jest.advanceTimersByTime(1);
  expect(b.admit()).toBe('probe');
});

test('an abandoned probe hands the turn to the next waiter at once', () => {
  const { b } = breaker(1, 1_000);
  b.record(outage(), false);
  jest.advanceTimersByTime(1_000);
  expect(b.admit()).toBe('probe');
  b.record({ kind: 'abandoned' }, true);
  expect(b.admit()).toBe('probe');
});

test('waiters wake when the breaker closes, the next becomes the probe, and a limit ends a wait', async () => {
  const { b } = breaker(1, 1_000);
  b.record(outage(), false);
  const ticks: number[] = [];
  const signal = new AbortController().signal;
  const first = b.wait(Date.now() + 60_000, signal, () => ticks.push(Date.now()), 250);
  const second = b.wait(Date.now() + 60_000, signal, () => undefined, 250);
  const limited = b.wait(Date.now() + 500, signal, () => undefined, 250);
  await jest.advanceTimersByTimeAsync(1_000);
  await expect(limited).resolves.toBe('limit');
  await expect(first).resolves.toBe('probe');
  expect(ticks.length).toBeGreaterThanOrEqual(4);
  b.record({ kind: 'healthy' }, true);
  await jest.advanceTimersByTimeAsync(1);
  await expect(second).resolves.toBe('closed');
});

test('an aborted wait rejects with the abort reason', async () => {
  const { b } = breaker(1, 1_000);
  b.record(outage(), false);
  const ac = new AbortController();
  const waiting = b.wait(Date.now() + 60_000, ac.signal, () => undefined, 250);
  ac.abort(new Error('cancelled'));
  await expect(waiting).rejects.toThrow('cancelled');
});

test('with nobody waiting when the probe is due, it closes one failure away from opening again', async () => {
  const { b, states } = breaker(3, 1_000);
  for (let i = 0; i < 3; i++) b.record(outage(), false);
  await jest.advanceTimersByTimeAsync(1_001);
  expect(b.state).toBe('closed');
  expect(b.admit()).toBe('call');
  b.record(outage(), false);
  expect(b.state).toBe('open');
  expect(states).toEqual(['open', 'closed', 'open']);
});

test('while someone waits, the due probe is theirs and the breaker stays open', async () => {
  const { b } = breaker(1, 1_000);
  b.record(outage(), false);
  const waiting = b.wait(Date.now() + 60_000, new AbortController().signal, () => undefined, 5_000);
  await jest.advanceTimersByTimeAsync(1_001);
  await expect(waiting).resolves.toBe('probe');
  expect(b.state).toBe('half-open');
});
