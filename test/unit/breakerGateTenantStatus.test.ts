/**
 * Which answers open a tenant's breaker rather than the worker's (breakerGate.ts): a 403 speaks for one tenant
 * (its authorization), as a 429 does (its rate limit); a 503 speaks for the API. A tenant refused must not hold
 * back the others.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createBreakerGate } from '../../src/activities/breakerGate';
import type { Classification, RunsApiAnswer } from '../../src/activities/classify';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';

// An attempt that may not wait (no heartbeat timeout: scheduled without a budget) shows a blocked breaker at once.
const unwaiting = () =>
  new MockActivityEnvironment({ attempt: 3, startToCloseTimeoutMs: 7_000, heartbeatTimeoutMs: 0 } as never, {
    // The refusals are what these tests provoke: the SDK's line per failed attempt is noise here.
    logger: new DefaultLogger('ERROR', () => undefined),
  });

async function afterTwo(status: number) {
  const metrics = createMetrics();
  const gate = createBreakerGate(
    { failures: 2, probeIntervalMs: 60_000, paced: false },
    metrics,
    createLogger('unit', 'silent'),
  );
  const verdict: Classification = {
    outcome: 'retryable',
    reason: `runs API answered ${status}`,
    httpStatus: status,
  };
  const answer: RunsApiAnswer = { kind: 'response', status, headers: {}, body: '', nowMs: 0 };
  gate.record('refused', {}, { verdict, answer, cancelled: false });
  gate.record('refused', {}, { verdict, answer, cancelled: false });
  const enter = (tenant: string) =>
    unwaiting()
      .run(async () => gate.enter(Context.current(), tenant, 1_000))
      .catch((e: unknown) => e);
  return {
    workerCircuit: (await metrics.circuitState.get()).values[0]?.value,
    other: await enter('other'),
    refused: await enter('refused'),
  };
}

test("a tenant's 403s open only that tenant's breaker: the others call", async () => {
  const { workerCircuit, other, refused } = await afterTwo(403);
  expect(workerCircuit).toBe(0);
  expect(other).toEqual({});
  expect(refused).toBeInstanceOf(ApplicationFailure);
  expect((refused as ApplicationFailure).details?.[0]).toEqual({ httpStatus: 403, attempt: 3 });
});

test("503s open the worker's breaker: every tenant waits", async () => {
  const { workerCircuit, other } = await afterTwo(503);
  expect(workerCircuit).toBe(1);
  expect(other).toBeInstanceOf(ApplicationFailure);
});
