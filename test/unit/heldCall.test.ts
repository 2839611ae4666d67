/**
 * A holdable call (contract/workflow.ts, TENANT_HOLD_PATCH) on the worker's side, against a real node:http server in
 * the SDK's MockActivityEnvironment: a paused tenant's attempt ends held, with no request and no attempt of its
 * own; the call numbers its attempts after those of the calls before it; a call that cannot hold ignores a pause.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { Agent } from 'undici';
import { createActivities } from '../../src/activities';
import { createBreakerGate } from '../../src/activities/breakerGate';
import type { AttemptHistory } from '../../src/contract/attempts';
import type { TenantPause } from '../../src/contract/tenantPause';
import {
  type PostRunHeadInput,
  type PostRunFailureDetails,
  type TenantHeldDetails,
  TENANT_PAUSED,
  holdableCall,
  holdableCallId,
} from '../../src/contract/workflow';
import type { DlqPublisher } from '../../src/kafka/dlqPublisher';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';

let server: http.Server;
let url: string;
let requests = 0;
let status = 503;
const dispatcher = new Agent();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests += 1;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status === 201 ? '{"run_id":"r-1","admission":"created"}' : '{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await dispatcher.close();
  await new Promise<void>((r) => server.close(() => r()));
});
beforeEach(() => {
  requests = 0;
  status = 503;
});

const PAUSE: TenantPause = {
  tenant: 'acme',
  paused: true,
  reason: 'runs API migration',
  at: '2026-12-06T08:00:00.000Z',
  by: 'ops@host',
};
const PRIOR: AttemptHistory = {
  attempts: [1, 2, 3].map((attempt) => ({
    attempt,
    at: '2026-12-06T07:59:00.000Z',
    http_status: 503,
    error: 'HTTP 503',
    duration_ms: 5,
  })),
  attempts_omitted: 0,
};

function activities(
  o: { paused?: () => TenantPause | undefined; prior?: AttemptHistory | Error; failures?: number } = {},
) {
  const metrics = createMetrics();
  const logger = createLogger('unit', 'silent');
  const historyReads: string[] = [];
  const acts = createActivities({
    gate: createBreakerGate(
      { failures: o.failures ?? 50, probeIntervalMs: 60_000, paced: false },
      metrics,
      logger,
    ),
    dispatcher,
    runsApi: { url },
    userAgent: 'poimen-relay/unit',
    dlq: {} as DlqPublisher,
    metrics,
    logger,
    startedWith: () => Promise.reject(new Error('not used')),
    sourceRecord: () => Promise.reject(new Error('not used')),
    callHistory: async (workflowId) => {
      historyReads.push(workflowId);
      if (o.prior instanceof Error) throw o.prior;
      return o.prior;
    },
    tenantPause: (tenant) => (tenant === 'acme' ? o.paused?.() : undefined),
  });
  return { acts, historyReads };
}

const env = (activityId: string, attempt: number, maximumAttempts?: number) =>
  new MockActivityEnvironment(
    {
      activityId,
      attempt,
      retryPolicy: { initialInterval: 1000, backoffCoefficient: 2, maximumInterval: 60_000, maximumAttempts },
      scheduledTimestampMs: Date.now(),
      scheduleToCloseTimeoutMs: 3_600_000,
      workflowExecution: { workflowId: 'dispatch:acme:d-1', runId: 'run-1' },
    } as never,
    { logger: new DefaultLogger('ERROR') },
  );

const HEAD: PostRunHeadInput = {
  tenant: 'acme',
  dispatch: { workflow_ref: 'onboarding@v3', goal_id: null, dispatch_key: 'd-1' },
  attemptTimeoutMs: 5_000,
  recordTimestampMs: Date.now(),
};
const BYTES = new TextEncoder().encode('{}');

async function failureOf(run: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

test('holdable call ids say the holds and the attempts before; other ids are calls that never hold', () => {
  expect(holdableCall(holdableCallId(2, 7))).toEqual({ holds: 2, attemptsBefore: 7 });
  expect(holdableCallId(0, 0)).toBe('call-0-after-0');
  for (const id of ['1', 'call-1-after-', 'xcall-1-after-2', 'call-1-after-2x', 'call--1-after-2']) {
    expect(holdableCall(id)).toBeUndefined();
  }
});

test("a paused tenant's attempt ends held: no request, not counted, with the pause and the history so far", async () => {
  const { acts } = activities({ paused: () => PAUSE });
  // The fourth attempt of the call: three made, the third's history in the heartbeat the server hands on.
  const e = env(holdableCallId(0, 0), 4);
  (e.context.info as { heartbeatDetails: unknown }).heartbeatDetails = PRIOR;
  const failure = await failureOf(e.run(acts.postRunWithInputBytes, HEAD, BYTES));
  expect(requests).toBe(0);
  expect(failure.type).toBe(TENANT_PAUSED);
  expect(failure.nonRetryable).toBe(true);
  expect(failure.message).toBe(
    'held: tenant acme is paused since 2026-12-06T08:00:00.000Z (runs API migration)',
  );
  const details = failure.details?.[0] as TenantHeldDetails;
  expect(details).toMatchObject({
    attempt: 3,
    httpStatus: 503,
    pausedAt: PAUSE.at,
    reason: PAUSE.reason,
  });
  expect(details.attempts?.map((a) => a.attempt)).toEqual([1, 2, 3]);
});

test('a call that cannot hold (an execution from before the patch) calls however the tenant stands', async () => {
  const { acts } = activities({ paused: () => PAUSE });
  status = 201;
  await expect(env('1', 1).run(acts.postRunWithInputBytes, HEAD, BYTES)).resolves.toEqual({
    run_id: 'r-1',
    admission: 'created',
  });
  expect(requests).toBe(1);
});

test('a pause read after the breaker let the attempt through still holds it, before the request', async () => {
  // Not paused as the attempt begins, paused when it would call: the second look holds it.
  let looks = 0;
  const { acts, historyReads } = activities({ paused: () => (++looks > 1 ? PAUSE : undefined) });
  const failure = await failureOf(env(holdableCallId(0, 0), 1).run(acts.postRunWithInputBytes, HEAD, BYTES));
  expect(looks).toBe(2);
  // The execution's first call: no history before it to read.
  expect(historyReads).toEqual([]);
  expect(requests).toBe(0);
  expect(failure.type).toBe(TENANT_PAUSED);
  expect((failure.details?.[0] as TenantHeldDetails).attempt).toBe(0);
});

test('a call scheduled again after a hold numbers its attempts on, and reads the history so far once to keep it', async () => {
  const { acts, historyReads } = activities({ prior: PRIOR });
  // Its first attempt, the fourth of the execution; the cap the workflow gave it is what is left of 5.
  const first = env(holdableCallId(1, 3), 1, 2);
  const beats: { attempts?: { attempt: number }[] }[] = [];
  first.on('heartbeat', (d: (typeof beats)[number]) => beats.push(d));
  const failure = await failureOf(first.run(acts.postRunWithInputBytes, HEAD, BYTES));
  expect(historyReads).toEqual(['dispatch:acme:d-1']);
  expect(requests).toBe(1);
  expect(failure.details?.[0]).toMatchObject({ attempt: 4, httpStatus: 503 });
  // Not the last (a fifth is allowed): the history goes on in the heartbeat, the three before it included.
  expect(beats.at(-1)?.attempts?.map((a) => a.attempt)).toEqual([1, 2, 3, 4]);

  // Its second attempt, the fifth and last: the heartbeat hands the history on, and the failure carries it.
  const second = env(holdableCallId(1, 3), 2, 2);
  (second.context.info as { heartbeatDetails: unknown }).heartbeatDetails = beats.at(-1);
  const last = await failureOf(second.run(acts.postRunWithInputBytes, HEAD, BYTES));
  expect(historyReads).toHaveLength(1);
  const details = last.details?.[0] as PostRunFailureDetails;
  expect(details.attempt).toBe(5);
  expect(details.attempts?.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5]);
});

test('an attempt waiting on the open breaker when the tenant is paused ends held at its next heartbeat', async () => {
  const now: { pause?: TenantPause } = {};
  const { acts } = activities({ paused: () => now.pause, failures: 1 });
  // One 503 opens the breaker (failures: 1) for the next attempt, which then waits, heartbeating.
  const gateEnv = () => {
    const e = env(holdableCallId(0, 0), 2);
    Object.assign(e.context.info, { heartbeatTimeoutMs: 30_000, startToCloseTimeoutMs: 3_600_000 });
    return e;
  };
  await failureOf(env('1', 1).run(acts.postRunWithInputBytes, HEAD, BYTES));
  expect(requests).toBe(1);
  const waiting = gateEnv();
  const beats: { waitingOnBreaker?: boolean }[] = [];
  waiting.on('heartbeat', (d: (typeof beats)[number]) => beats.push(d));
  const run = failureOf(waiting.run(acts.postRunWithInputBytes, HEAD, BYTES));
  await new Promise((r) => setTimeout(r, 200));
  expect(beats.some((b) => b.waitingOnBreaker)).toBe(true);
  now.pause = PAUSE;
  const failure = await run;
  expect(failure.type).toBe(TENANT_PAUSED);
  expect((failure.details?.[0] as TenantHeldDetails).attempt).toBe(1);
  expect(requests).toBe(1);
}, 15_000);

test('paused while its request was out: the attempt counts, and the call ends held rather than retried', async () => {
  const now: { pause?: TenantPause } = {};
  const { acts } = activities({ paused: () => now.pause });
  // The pause arrives as the API answers 503: the server's next retry might start past the budget's end.
  const answered = new Promise<void>((resolve) => server.once('request', () => resolve()));
  const run = failureOf(env(holdableCallId(0, 0), 2).run(acts.postRunWithInputBytes, HEAD, BYTES));
  await answered;
  now.pause = PAUSE;
  const failure = await run;
  expect(requests).toBe(1);
  expect(failure.type).toBe(TENANT_PAUSED);
  const details = failure.details?.[0] as TenantHeldDetails;
  expect(details).toMatchObject({ attempt: 2, httpStatus: 503 });
  expect(details.attempts?.map((a) => [a.attempt, a.http_status])).toEqual([
    [1, null],
    [2, 503],
  ]);
});

test('a resumed call whose history cannot be read still calls, numbered on from the attempts before', async () => {
  const { acts } = activities({ prior: new Error('14 UNAVAILABLE: Temporal is busy') });
  const failure = await failureOf(
    env(holdableCallId(1, 3), 1, 1).run(acts.postRunWithInputBytes, HEAD, BYTES),
  );
  expect(requests).toBe(1);
  const details = failure.details?.[0] as PostRunFailureDetails;
  expect(details.attempt).toBe(4);
  expect(details.attempts?.map((a) => a.attempt)).toEqual([1, 2, 3, 4]);
  expect(details.attempts?.[3]?.http_status).toBe(503);
});

test.each([
  ['a call that cannot hold (an execution from before the patch)', 'RunsApiUnavailable', '1', 3],
  ['a holdable call below its cap', TENANT_PAUSED, holdableCallId(0, 0), 3],
  ['a holdable call at its cap', 'RunsApiUnavailable', holdableCallId(0, 0), 2],
])('answered as the pause arrives, attempt 2 of %s ends %s', async (_, type, id, cap) => {
  const now: { pause?: TenantPause } = {};
  const { acts } = activities({ paused: () => now.pause });
  const answered = new Promise<void>((resolve) => server.once('request', () => resolve()));
  const run = failureOf(env(id, 2, cap).run(acts.postRunWithInputBytes, HEAD, BYTES));
  await answered;
  now.pause = PAUSE;
  expect((await run).type).toBe(type);
});

test('the attempt that reaches the cap is not held when the pause arrives during it: the call ends as it would', async () => {
  const now: { pause?: TenantPause } = {};
  const { acts } = activities({ paused: () => now.pause });
  const answered = new Promise<void>((resolve) => server.once('request', () => resolve()));
  // The second and last attempt this call may make (the cap less the attempts before it).
  const run = failureOf(env(holdableCallId(1, 3), 2, 2).run(acts.postRunWithInputBytes, HEAD, BYTES));
  await answered;
  now.pause = PAUSE;
  const failure = await run;
  expect(failure.type).toBe('RunsApiUnavailable');
  expect((failure.details?.[0] as PostRunFailureDetails).attempt).toBe(5);
});
