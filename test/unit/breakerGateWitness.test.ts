/**
 * Whose breaker an outage-class failure opens (breakerGate.ts, ApiWitness): one tenant's timeouts while the API
 * answers another tenant are that tenant's, so they never hold the other tenants' calls; failures with no other
 * tenant answered during them, or failures of two tenants, are the API's and open the worker's breaker.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { type Pass, createBreakerGate } from '../../src/activities/breakerGate';
import type { Classification, RunsApiAnswer } from '../../src/activities/classify';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';

// An attempt that may not wait (no heartbeat timeout) shows a blocked breaker at once, as a failure.
const unwaiting = () =>
  new MockActivityEnvironment({ attempt: 2, startToCloseTimeoutMs: 7_000, heartbeatTimeoutMs: 0 } as never, {
    logger: new DefaultLogger('ERROR', () => undefined),
  });

const timeout: Classification = { outcome: 'retryable', reason: 'timeout', httpStatus: null };
const timedOut: RunsApiAnswer = { kind: 'error', code: 'TimeoutError' };
const created: Classification = { outcome: 'success', admission: 'created', runId: 'r1' };
const answered201: RunsApiAnswer = { kind: 'response', status: 201, headers: {}, body: '{}', nowMs: 0 };

const refused: Classification = { outcome: 'retryable', reason: 'connection refused', httpStatus: null };
const throttled: Classification = { outcome: 'retryable', reason: 'runs API answered 429', httpStatus: 429 };
const answered429: RunsApiAnswer = { kind: 'response', status: 429, headers: {}, body: '', nowMs: 0 };

function gateAt(opts: { failures?: number; probeIntervalMs?: number } = {}) {
  let t = 1_000;
  const metrics = createMetrics();
  const gate = createBreakerGate(
    { failures: opts.failures ?? 2, probeIntervalMs: opts.probeIntervalMs ?? 60_000, paced: false },
    metrics,
    createLogger('unit', 'silent'),
    () => t,
  );
  const ok = (tenant: string, cancelled = false) =>
    gate.record(tenant, {}, { verdict: created, answer: answered201, cancelled, startedMs: t - 5 });
  const fail = (tenant: string, startedMs?: number, pass: Pass = {}) =>
    gate.record(tenant, pass, {
      verdict: timeout,
      answer: timedOut,
      cancelled: false,
      ...(startedMs === undefined ? {} : { startedMs }),
    });
  const refuse = (tenant: string, startedMs: number) =>
    gate.record(
      tenant,
      {},
      {
        verdict: refused,
        answer: { kind: 'error', code: 'ECONNREFUSED' },
        cancelled: false,
        startedMs,
      },
    );
  const throttle = (tenant: string) =>
    gate.record(tenant, {}, { verdict: throttled, answer: answered429, cancelled: false, startedMs: t - 5 });
  const enter = (tenant: string) =>
    unwaiting()
      .run(async () => gate.enter(Context.current(), tenant, 1_000))
      .catch((e: unknown) => e);
  const workerCircuit = async () => (await metrics.circuitState.get()).values[0]?.value;
  return { ok, fail, refuse, throttle, enter, workerCircuit, at: (ms: number) => void (t = ms) };
}

/** A gate on which a call of `tenant` was answered at 5,000, the clock now at 11,000. */
function answered(tenant: string, opts: Parameters<typeof gateAt>[0] = {}) {
  const g = gateAt(opts);
  g.at(5_000);
  g.ok(tenant);
  g.at(11_000);
  return g;
}

test("one tenant's calls timing out while another tenant is answered open only that tenant's breaker", async () => {
  // Tenant a's calls went out at 1,000 and hang; tenant b's, sent later, are answered meanwhile.
  const g = answered('b');
  for (let i = 0; i < 3; i++) g.fail('a', 1_000);
  expect(await g.workerCircuit()).toBe(0);
  expect(await g.enter('b')).toEqual({});
  const held = await g.enter('a');
  expect(held).toBeInstanceOf(ApplicationFailure);
  // Its own breaker: the others call on, and b's answers do not close a's.
  g.ok('b');
  expect(await g.enter('a')).toBeInstanceOf(ApplicationFailure);
});

test("failures with no other tenant answered while they were out open the worker's breaker", async () => {
  const g = answered('b');
  // Sent after b's last answer: nothing says the API was up while they failed.
  g.at(16_000);
  g.fail('a', 6_000);
  g.fail('a', 6_000);
  expect(await g.workerCircuit()).toBe(1);
  expect(await g.enter('b')).toBeInstanceOf(ApplicationFailure);
});

test("once a second tenant fails too, the failures are the API's again", async () => {
  const g = answered('b');
  // a's first failure is its own (b answered during it); then b fails: two tenants failing is the API.
  g.fail('a', 1_000);
  g.fail('b', 6_000);
  expect(await g.workerCircuit()).toBe(0);
  g.fail('a', 1_000);
  expect(await g.workerCircuit()).toBe(1);
});

test("a lone tenant's failures, or a call without a start time, are the worker's", async () => {
  const lone = answered('a');
  // a's own earlier answer is no witness for a.
  lone.fail('a', 1_000);
  lone.fail('a', 1_000);
  expect(await lone.workerCircuit()).toBe(1);

  const unknown = answered('b');
  unknown.fail('a');
  unknown.fail('a');
  expect(await unknown.workerCircuit()).toBe(1);
});

test('no witness: a 429 (a gateway may throttle while all behind it is down), a cancelled call, an answer at the same instant', async () => {
  for (const witness of ['429', 'cancelled', 'same instant'] as const) {
    const g = gateAt();
    g.at(5_000);
    if (witness === '429') g.throttle('c');
    else g.ok('b', witness === 'cancelled');
    g.at(11_000);
    const startedMs = witness === 'same instant' ? 5_000 : 1_000;
    g.fail('a', startedMs);
    g.fail('a', startedMs);
    expect([witness, await g.workerCircuit()]).toEqual([witness, 1]);
  }
});

test("a call that never reached the API is the worker's, whoever else was answered", async () => {
  const g = answered('b');
  g.refuse('a', 1_000);
  g.refuse('a', 1_000);
  expect(await g.workerCircuit()).toBe(1);
});

test('a healthy answer starts the count of failing tenants again', async () => {
  const g = gateAt({ failures: 3 });
  g.at(4_000);
  g.fail('b');
  // Another tenant answered: b's failure is past; a's failures during it are a's own.
  g.at(5_000);
  g.ok('c');
  g.at(11_000);
  for (let i = 0; i < 3; i++) g.fail('a', 1_000);
  expect(await g.workerCircuit()).toBe(0);
});

test("a failure that is the tenant's neither resets nor adds to the worker's count", async () => {
  const g = answered('b');
  g.fail('a', 6_000); // after b's answer: the worker's, 1 of 2
  g.fail('a', 1_000); // b answered during it: a's own
  expect(await g.workerCircuit()).toBe(0);
  g.fail('a', 6_000); // 2 of 2
  expect(await g.workerCircuit()).toBe(1);
});

test("a tenant's probe that fails while others are answered gives its ticket back: the next probe goes out", async () => {
  const g = answered('b', { failures: 1, probeIntervalMs: 1 });
  g.fail('a', 1_000);
  for (let probe = 0; probe < 2; probe++) {
    await new Promise((r) => setTimeout(r, 5));
    const pass = (await g.enter('a')) as Pass;
    expect(pass.tenant).toEqual(expect.any(Number));
    g.ok('b');
    g.fail('a', 1_000, pass);
  }
  expect(await g.workerCircuit()).toBe(0);
});

test("the tenant's own later answers do not hide another tenant's answer during its call", async () => {
  const g = gateAt();
  g.at(5_000);
  g.ok('b');
  g.at(6_000);
  g.ok('a'); // one of a's calls succeeds; others of its calls, sent at 1,000, still hang
  g.at(11_000);
  g.fail('a', 1_000);
  g.fail('a', 1_000);
  expect(await g.workerCircuit()).toBe(0);
});
