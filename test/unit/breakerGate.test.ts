/**
 * Where an attempt meets the worker's circuit breaker (docs/design.md "Riding out an outage"): with the breaker open,
 * an attempt of a budgeted dispatch, under an attempts cap or not, waits inside itself, heartbeating, and calls once
 * it closes or it is the probe, so it spends no attempt without a call; an attempt from an execution started before
 * the budget fails at once without calling.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { type Pass, createBreakerGate, waitLimitMs } from '../../src/activities/breakerGate';
import type { Classification, RunsApiAnswer } from '../../src/activities/classify';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';

const FAILED: Classification = { outcome: 'retryable', reason: 'runs API answered 503', httpStatus: 503 };
const ANSWER: RunsApiAnswer = { kind: 'response', status: 503, headers: {}, body: '', nowMs: 0 };
const OK: Classification = { outcome: 'success', admission: 'created', runId: 'r' };
const FAILED_CALL = { verdict: FAILED, answer: ANSWER, cancelled: false };
const OK_CALL = { verdict: OK, answer: ANSWER, cancelled: false };

function openGate(paced = false) {
  const metrics = createMetrics();
  const gate = createBreakerGate(
    { failures: 2, probeIntervalMs: 60_000, paced },
    metrics,
    createLogger('unit', 'silent'),
  );
  gate.record('acme', {}, FAILED_CALL);
  gate.record('acme', {}, FAILED_CALL);
  return { gate, metrics };
}

const budgeted = (over: Record<string, unknown> = {}) => ({
  attempt: 3,
  heartbeatTimeoutMs: 30_000,
  startToCloseTimeoutMs: 3_600_000,
  scheduleToCloseTimeoutMs: 3_600_000,
  scheduledTimestampMs: Date.now(),
  retryPolicy: { initialInterval: 1_000, backoffCoefficient: 2, maximumInterval: 300_000 },
  ...over,
});

const CAPPED = { retryPolicy: { initialInterval: 1_000, maximumInterval: 300_000, maximumAttempts: 4 } };

test.each([
  ['uncapped', budgeted()],
  ['under an attempts cap', budgeted(CAPPED)],
])(
  'an %s attempt waits while the breaker is open, heartbeating, and calls when it closes',
  async (_what, info) => {
    const { gate, metrics } = openGate();
    const env = new MockActivityEnvironment(info);
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const entered = env.run(async () => gate.enter(Context.current(), 'acme', 1_000));
    await new Promise((r) => setTimeout(r, 50));
    expect((await metrics.breakerWaiting.get()).values[0]?.value).toBe(1);
    expect(beats[0]).toMatchObject({ waitingOnBreaker: true, httpStatus: 503, attempt: 3 });
    expect((await metrics.circuitState.get()).values[0]?.value).toBe(1);
    // Another call (one in flight when it opened) comes back healthy: the breaker closes.
    gate.record('acme', {}, OK_CALL);
    await expect(entered).resolves.toEqual({});
    expect(beats.at(-1)).toMatchObject({ waitingOnBreaker: false });
    expect((await metrics.breakerWaiting.get()).values[0]?.value).toBe(0);
    expect((await metrics.circuitState.get()).values[0]?.value).toBe(0);
  },
);

test('with RUNS_API_MAX_RPS set, a released attempt is retried through the rate limit instead of calling', async () => {
  const { gate } = openGate(true);
  const env = new MockActivityEnvironment(budgeted());
  const entered = env.run(async () => gate.enter(Context.current(), 'acme', 1_000));
  await new Promise((r) => setTimeout(r, 20));
  gate.record('acme', {}, OK_CALL);
  const err = (await entered.catch((e: unknown) => e)) as ApplicationFailure;
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect(err.type).toBe('RunsApiUnavailable');
  expect(err.message).toMatch(/RUNS_API_MAX_RPS/);
  expect(err.nextRetryDelay).toBeDefined();
});

test('an attempt under an attempts cap that waits is the probe when its turn comes: its call is its own', async () => {
  const metrics = createMetrics();
  const gate = createBreakerGate(
    { failures: 2, probeIntervalMs: 50, paced: false },
    metrics,
    createLogger('unit', 'silent'),
  );
  gate.record('acme', {}, FAILED_CALL);
  gate.record('acme', {}, FAILED_CALL);
  const env = new MockActivityEnvironment(budgeted(CAPPED));
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  const pass = (await env.run(async () => gate.enter(Context.current(), 'acme', 1_000))) as Pass;
  expect(beats[0]).toMatchObject({ waitingOnBreaker: true, attempt: 3 });
  expect(pass.global).toEqual(expect.any(Number));
  // Its failure, a call of its own, opens the breaker again.
  gate.record('acme', pass, FAILED_CALL);
  expect((await metrics.circuitState.get()).values[0]?.value).toBe(1);
});

test('an attempt under an attempts cap may wait as long as an uncapped one', () => {
  const now = 1_000_000;
  const info = budgeted({ scheduledTimestampMs: now - 50_000, scheduleToCloseTimeoutMs: 60_000 });
  const capped = { ...info, ...CAPPED };
  expect(waitLimitMs(capped as never, 10_000, now)).toBe(waitLimitMs(info as never, 10_000, now));
  expect(waitLimitMs(capped as never, 10_000, now)).toBeGreaterThan(now);
});

test('an attempt started before the budget (no heartbeat timeout) fails at once, without a call, with the last failure', async () => {
  const { gate } = openGate();
  const env = new MockActivityEnvironment(budgeted({ heartbeatTimeoutMs: undefined }));
  const err = (await env
    .run(async () => gate.enter(Context.current(), 'acme', 1_000))
    .catch((e: unknown) => e)) as ApplicationFailure | undefined;
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect(err!.message).toMatch(
    /^runs API unavailable \(circuit breaker open since .+\); last: runs API answered 503$/,
  );
  expect(err!.details?.[0]).toEqual({ httpStatus: 503, attempt: 3 });
});

test('a waiting attempt gives up a second before its budget ends', () => {
  const now = 1_000_000;
  const info = budgeted({ scheduledTimestampMs: now - 50_000, scheduleToCloseTimeoutMs: 60_000 });
  expect(waitLimitMs(info as never, 10_000, now)).toBe(now + 9_000);
});

test('a worker shutting down releases its waiting attempts at once, as retryable failures', async () => {
  const { gate } = openGate();
  const env = new MockActivityEnvironment(budgeted());
  const entered = env.run(async () => gate.enter(Context.current(), 'acme', 1_000));
  await new Promise((r) => setTimeout(r, 20));
  gate.releaseWaiters();
  const err = (await entered.catch((e: unknown) => e)) as ApplicationFailure;
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect(err.nonRetryable).toBeFalsy();
  expect(err.message).toMatch(/circuit breaker open/);
});

test("one tenant's 429s open only that tenant's breaker: the API is up for the others", async () => {
  const metrics = createMetrics();
  const gate = createBreakerGate(
    { failures: 2, probeIntervalMs: 60_000, paced: false },
    metrics,
    createLogger('unit', 'silent'),
  );
  const limited: Classification = { outcome: 'retryable', reason: 'runs API answered 429', httpStatus: 429 };
  const call = { verdict: limited, answer: { ...ANSWER, status: 429 }, cancelled: false };
  gate.record('noisy', {}, call);
  gate.record('noisy', {}, call);
  expect((await metrics.circuitState.get()).values[0]?.value).toBe(0);
  const other = new MockActivityEnvironment(budgeted(CAPPED));
  await expect(other.run(async () => gate.enter(Context.current(), 'quiet', 1_000))).resolves.toEqual({});
  const noisy = new MockActivityEnvironment(budgeted(CAPPED));
  const beats: unknown[] = [];
  noisy.on('heartbeat', (d: unknown) => beats.push(d));
  const entered = noisy
    .run(async () => gate.enter(Context.current(), 'noisy', 1_000))
    .catch((e: unknown) => e);
  await new Promise((r) => setTimeout(r, 20));
  expect(beats[0]).toMatchObject({ waitingOnBreaker: true, httpStatus: 429, attempt: 3 });
  gate.releaseWaiters();
  const err = (await entered) as ApplicationFailure;
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect(err.details?.[0]).toEqual({ httpStatus: 429, attempt: 3 });
});
