/**
 * Who probes the worker's open breaker (breakerGate.ts, probeTurns.ts): the tenants with waiting attempts take the
 * probe in turns, not the attempts in the order they wait. Otherwise one tenant whose own backend stays down after
 * a shared outage, holding most of the waiting attempts, spends probe after probe on its own failures while every
 * other tenant's calls stay held.
 */
import { Context } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { type Pass, createBreakerGate } from '../../src/activities/breakerGate';
import { ProbeTurns } from '../../src/activities/probeTurns';
import type { Classification, RunsApiAnswer } from '../../src/activities/classify';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';

const PROBE_MS = 150;
const timeout: Classification = { outcome: 'retryable', reason: 'timeout', httpStatus: null };
const timedOut: RunsApiAnswer = { kind: 'error', code: 'TimeoutError' };
const created: Classification = { outcome: 'success', admission: 'created', runId: 'r1' };
const answered201: RunsApiAnswer = { kind: 'response', status: 201, headers: {}, body: '{}', nowMs: 0 };

/** An attempt of a budgeted dispatch: it may wait on the breaker (it heartbeats), for minutes. */
const waiting = () =>
  new MockActivityEnvironment(
    {
      attempt: 2,
      heartbeatTimeoutMs: 30_000,
      startToCloseTimeoutMs: 600_000,
      scheduleToCloseTimeoutMs: 600_000,
      scheduledTimestampMs: Date.now(),
    } as never,
    { logger: new DefaultLogger('ERROR', () => undefined) },
  );

function setup(probeIntervalMs = PROBE_MS, paced = false) {
  const metrics = createMetrics();
  const gate = createBreakerGate(
    { failures: 2, probeIntervalMs, paced },
    metrics,
    createLogger('unit', 'silent'),
  );
  const fail = (tenant: string, pass: Pass = {}) =>
    gate.record(tenant, pass, {
      verdict: timeout,
      answer: timedOut,
      cancelled: false,
      startedMs: performance.now(),
    });
  const ok = (tenant: string, pass: Pass = {}) =>
    gate.record(tenant, pass, {
      verdict: created,
      answer: answered201,
      cancelled: false,
      startedMs: performance.now(),
    });
  const circuit = async () => (await metrics.circuitState.get()).values[0]?.value;
  const waitingCount = async () => (await metrics.breakerWaiting.get()).values[0]?.value ?? 0;
  return { gate, fail, ok, circuit, waitingCount };
}

/**
 * The worker's breaker opened by a shared outage, and a way to line up waiting attempts of tenants and to let the
 * next probe go: `probe()` ends the admitted attempt as `failing` says (a failure, or a 201 that closes the
 * breaker) and returns its tenant.
 */
async function openBreaker(failing: Set<string>) {
  const { gate, fail, ok, circuit, waitingCount } = setup();
  // A shared outage: two failures with nobody answered meanwhile open the worker's breaker.
  fail('x');
  fail('x');
  expect(await circuit()).toBe(1);
  const pending = new Map<number, Promise<{ i: number; tenant: string; pass: Pass }>>();
  /** Lines up attempts in this order: each is waiting before the next one comes. `drop` cancels one. */
  const queue = async (tenants: string[]) => {
    const queued: { drop: () => Promise<void> }[] = [];
    for (const tenant of tenants) {
      const before = await waitingCount();
      const i = pending.size + Math.random();
      const env = waiting();
      const entered: Promise<{ i: number; tenant: string; pass: Pass }> = env.run(async () => ({
        i,
        tenant,
        pass: await gate.enter(Context.current(), tenant, 1_000),
      }));
      pending.set(i, entered);
      queued.push({
        drop: async () => {
          pending.delete(i);
          env.cancel();
          await entered.catch(() => undefined);
        },
      });
      for (let n = 0; n < 1_000 && (await waitingCount()) <= before; n++) await new Promise(setImmediate);
      expect(await waitingCount()).toBe(before + 1);
    }
    return queued;
  };
  const probe = async (): Promise<string> => {
    const { i, tenant, pass } = await Promise.race(pending.values());
    pending.delete(i);
    expect(pass.global).toBeDefined();
    if (failing.has(tenant)) fail(tenant, pass);
    else ok(tenant, pass);
    return tenant;
  };
  /** The admitted attempt fails before its call: its probe ticket goes back unused. Returns its tenant. */
  const released = async (): Promise<string> => {
    const { i, tenant, pass } = await Promise.race(pending.values());
    pending.delete(i);
    expect(pass.global).toBeDefined();
    gate.release(tenant, pass);
    return tenant;
  };
  /** The admitted attempt's call is cancelled (worker shutdown): nothing was learnt. Returns its tenant. */
  const cancelled = async (): Promise<string> => {
    const { i, tenant, pass } = await Promise.race(pending.values());
    pending.delete(i);
    expect(pass.global).toBeDefined();
    gate.record(tenant, pass, {
      verdict: timeout,
      answer: timedOut,
      cancelled: true,
      startedMs: performance.now(),
    });
    return tenant;
  };
  /** Probes until the breaker closes (or `max` probes), then lets the rest call; returns the probes' tenants. */
  const probesUntilClosed = async (max: number): Promise<string[]> => {
    const probes: string[] = [];
    while (probes.length < max && (await circuit()) !== 0) probes.push(await probe());
    if ((await circuit()) === 0) await Promise.all(pending.values());
    return probes;
  };
  return { queue, probe, released, cancelled, fail, probesUntilClosed };
}

test("a tenant that has probed lets another tenant's waiting attempt take the next probe", async () => {
  // Tenant x's backend stays down after the outage; twenty of its attempts wait, and one has probed and failed.
  const b = await openBreaker(new Set(['x']));
  await b.queue(Array<string>(20).fill('x'));
  expect(await b.probe()).toBe('x');
  // Tenant z's attempt comes: it takes the next probe, not the nineteen waiting ahead of it.
  await b.queue(['z']);
  expect(await b.probesUntilClosed(20)).toEqual(['z']);
});

test('tenants that have probed wait behind one that has not', async () => {
  const b = await openBreaker(new Set(['x', 'y']));
  await b.queue(['x', 'y', 'x', 'y']);
  // x and y each fail one probe, in turn (which first is chance: their waits end at the same moment).
  expect([await b.probe(), await b.probe()].sort()).toEqual(['x', 'y']);
  await b.queue(['z']);
  expect(await b.probesUntilClosed(5)).toEqual(['z']);
});

test('while the API is down for every tenant, the tenants take the probe in turns', async () => {
  const b = await openBreaker(new Set(['x', 'z']));
  await b.queue(['x', 'x', 'x', 'z', 'z']);
  const probes = await b.probesUntilClosed(5);
  // Each tenant in turn while both wait; x alone at the end.
  expect(probes.slice(0, 4).every((t, n) => n === 0 || t !== probes[n - 1])).toBe(true);
  expect(probes.sort()).toEqual(['x', 'x', 'x', 'z', 'z']);
});

test('a tenant whose attempts stopped waiting holds no turn: the others probe on', async () => {
  const b = await openBreaker(new Set(['x']));
  await b.queue(['x', 'x']);
  expect(await b.probe()).toBe('x');
  const [z] = await b.queue(['z']);
  // z's attempt ends before its turn (cancelled): x, the only tenant waiting, probes next.
  await z!.drop();
  expect(await b.probe()).toBe('x');
});

test('the turns are forgotten when the breaker closes', () => {
  const turns = new ProbeTurns();
  turns.waiting('x', 1);
  turns.waiting('z', 1);
  turns.took('x');
  expect([turns.yields('x'), turns.yields('z')]).toEqual([true, false]);
  turns.reset();
  expect([turns.yields('x'), turns.yields('z')]).toEqual([false, false]);
});

test('a lone tenant keeps probing, one probe per interval, until its API answers', async () => {
  const { gate, fail, ok, circuit } = setup();
  fail('x');
  fail('x');
  const started = performance.now();
  const probes: number[] = [];
  for (let n = 0; n < 3; n++) {
    const pass: Pass = await waiting().run(async () => gate.enter(Context.current(), 'x', 1_000));
    expect(pass.global).toBeDefined();
    probes.push(performance.now() - started);
    if (n < 2) fail('x', pass);
    else ok('x', pass);
  }
  expect(await circuit()).toBe(0);
  // One probe per interval: three probes take at least three intervals.
  expect(probes[2]).toBeGreaterThanOrEqual(3 * PROBE_MS - 5);
});

test("a probe that made no call keeps its tenant's turn", async () => {
  const b = await openBreaker(new Set(['x', 'z']));
  await b.queue(['x', 'x']);
  expect(await b.probe()).toBe('x');
  await b.queue(['z', 'z']);
  // z's attempt is admitted as the probe, then fails before its call (gate.release): nothing was learnt.
  expect(await b.released()).toBe('z');
  // It is still z's turn: x has probed, z has not.
  expect(await b.probe()).toBe('z');
});

test('an attempt whose heartbeat throws as it is admitted gives the probe back', async () => {
  const { gate, fail } = setup();
  fail('x');
  fail('x');
  const info = {
    attempt: 2,
    heartbeatTimeoutMs: 30_000,
    startToCloseTimeoutMs: 600_000,
    scheduleToCloseTimeoutMs: 600_000,
    scheduledTimestampMs: Date.now(),
  } as never;
  const broken = {
    info,
    cancellationSignal: new AbortController().signal,
    heartbeat: (d?: unknown) => {
      // The heartbeat that says the attempt no longer waits fails (e.g. its details could not be converted).
      if ((d as { waitingOnBreaker?: boolean } | undefined)?.waitingOnBreaker === false)
        throw new Error('heartbeat failed');
    },
  };
  await expect(gate.enter(broken, 'x', 1_000)).rejects.toThrow('heartbeat failed');
  // The probe it was admitted as is not held by nobody: the next attempt takes it within the interval.
  const next = await Promise.race([
    waiting().run(async () => gate.enter(Context.current(), 'x', 1_000)),
    new Promise<'held'>((resolve) => setTimeout(() => resolve('held'), 5 * PROBE_MS).unref()),
  ]);
  expect(next).toEqual({ global: expect.any(Number) });
});

test("a cancelled probe, or a call that was not the probe, leaves its tenant's turn", async () => {
  const b = await openBreaker(new Set(['x', 'z']));
  await b.queue(['x', 'x']);
  expect(await b.probe()).toBe('x');
  // A call of z admitted before the breaker opened fails late: it was no probe, z has not had its turn.
  b.fail('z');
  await b.queue(['z', 'z']);
  // z's probe is cancelled: still z's turn.
  expect(await b.cancelled()).toBe('z');
  expect(await b.probe()).toBe('z');
});

test('a probe given back without a call goes to the next waiting attempt at once, not an interval later', async () => {
  const { gate, fail } = setup(2_000);
  fail('x');
  fail('x');
  const attempts = [0, 1].map((n) =>
    waiting()
      .run(async (): Promise<Pass> => gate.enter(Context.current(), 'x', 1_000))
      .then((pass) => ({ n, pass })),
  );
  const admitted = await Promise.race(attempts);
  expect(admitted.pass.global).toBeDefined();
  const givenBack = performance.now();
  gate.release('x', admitted.pass);
  const next = await attempts[1 - admitted.n]!;
  expect(performance.now() - givenBack).toBeLessThan(1_000);
  expect(next.pass.global).toBeDefined();
});

test('with RUNS_API_MAX_RPS, a waiting attempt admitted as the probe calls (it is not sent back to the queue)', async () => {
  const { gate, fail } = setup(PROBE_MS, true);
  fail('x');
  fail('x');
  const pass: Pass = await waiting().run(async () => gate.enter(Context.current(), 'x', 1_000));
  expect(pass.global).toBeDefined();
});
