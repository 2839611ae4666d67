/**
 * The `dispatch` workflow holding its call while the tenant is paused (contract/workflow.ts, TENANT_HOLD_PATCH), with
 * scripted activities on a local Temporal dev server (the stack's cached temporal CLI): the wait for the resume
 * signal or the next look, the budget and attempts the call scheduled after it gets, and the dead letter's count.
 * The worker's side of a hold is test/unit/heldCall.test.ts; the whole relay's, test/it_tenant_hold.test.ts.
 */
import { randomUUID as uuid } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { Context } from '@temporalio/activity';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import {
  type DeadLetterInput,
  type DispatchInput,
  type TenantHeldDetails,
  type TenantHoldState,
  TENANT_HOLD_PATCH,
  TENANT_PAUSED,
  TENANT_RESUMED_SIGNAL,
  deadLetterTaskQueue,
} from '../../src/contract/workflow';
import { historyToJson } from '../support/histories';
import { startWorkflowTestEnv } from '../support/workflowTestEnv';
import { recordingHistories, writeHistoryFixture } from '../support/recordHistories';

let env: TestWorkflowEnvironment;
let workflowBundle: { code: string };

beforeAll(async () => {
  ({ env, workflowBundle } = await startWorkflowTestEnv());
}, 60_000);
afterAll(async () => {
  await env?.teardown();
});

type Event = temporal.api.history.v1.IHistoryEvent;
/** What a call's attempt does, by its activity id and its attempt within that call. */
type Script = (activityId: string, attempt: number) => Promise<{ run_id: string; admission: 'created' }>;

const PAUSED_AT = '2026-12-06T08:00:00.000Z';
const held = (attempt: number, httpStatus: number | null = 503): ApplicationFailure =>
  ApplicationFailure.create({
    type: TENANT_PAUSED,
    message: `held: tenant acme is paused since ${PAUSED_AT} (migration)`,
    nonRetryable: true,
    details: [{ attempt, httpStatus, pausedAt: PAUSED_AT, reason: 'migration' } satisfies TenantHeldDetails],
  });
const unavailable = (attempt: number) =>
  ApplicationFailure.create({
    type: 'RunsApiUnavailable',
    message: 'HTTP 503',
    details: [{ httpStatus: 503, attempt }],
  });

const BUDGETED = {
  attemptTimeoutMs: 2_000,
  initialIntervalMs: 100,
  backoff: 1.5,
  maxIntervalMs: 400,
  maxAttempts: 20,
  maxDurationMs: 60_000,
  attemptCap: 5,
};
const input = (policy: DispatchInput['policy'] = BUDGETED): DispatchInput => ({
  tenant: 'acme',
  dispatch: { workflow_ref: 'onboarding@v3', goal_id: null, dispatch_key: `d-${uuid()}`, input_json: '{}' },
  source: { topic: 'poimen.acme.dispatch', partition: 0, offset: '7', timestamp: '1700000000000' },
  policy,
});

/** What the worker's look (`tenantPauseOf`) answers; the tests set it (null: resumed). */
let pauseNow: TenantHoldState | null = null;
/** Set: the look fails (a defect in the worker's answer), with this message. */
let lookFails: string | undefined;
let looks = 0;
beforeEach(() => {
  pauseNow = null;
  lookFails = undefined;
  looks = 0;
});

async function runDispatch(
  dispatch: DispatchInput,
  script: Script,
  during?: (workflowId: string) => Promise<void>,
) {
  const deadLetters: DeadLetterInput[] = [];
  const taskQueue = `hold-${uuid()}`;
  const post = async () => {
    const { activityId, attempt } = Context.current().info;
    return script(activityId, attempt);
  };
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle,
    activities: {
      postRunWithInputBytes: post,
      postRunReadingInput: post,
      tenantPauseOf: async () => {
        looks += 1;
        if (lookFails) throw new Error(lookFails);
        return pauseNow;
      },
    },
  });
  const deadLetterWorker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue: deadLetterTaskQueue(taskQueue),
    activities: { deadLetter: async (dl: DeadLetterInput) => void deadLetters.push(dl) },
  });
  const workflowId = `dispatch:acme:${dispatch.dispatch.dispatch_key}`;
  const execution = (async () => {
    const handle = await env.client.workflow.start('dispatch', { taskQueue, workflowId, args: [dispatch] });
    await during?.(workflowId);
    return handle.result().then(
      (result) => ({ result, error: undefined as unknown }),
      (error: unknown) => ({ result: undefined, error }),
    );
  })();
  const [outcome] = await Promise.all([worker.runUntil(execution), deadLetterWorker.runUntil(execution)]);
  const { events } = await env.client.workflow.getHandle(workflowId).fetchHistory();
  return { ...outcome, deadLetters, events: events ?? [] };
}

/** Waits until the execution is held: its `nth` wait for the resume has started (within 20 s of the call). */
async function heldTimer(
  workflowId: string,
  nth = 1,
  timeoutMs = 20_000,
): Promise<temporal.api.history.v1.ITimerStartedEventAttributes> {
  for (const until = Date.now() + timeoutMs; Date.now() < until;) {
    const { events } = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const timer = events?.filter((e) => e.timerStartedEventAttributes)[nth - 1];
    if (timer) return timer.timerStartedEventAttributes!;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the execution never started wait ${nth} for the resume`);
}

const calls = (events: Event[]) =>
  events
    .map((e) => e.activityTaskScheduledEventAttributes)
    .filter((a): a is temporal.api.history.v1.IActivityTaskScheduledEventAttributes => !!a)
    .filter((a) => a.activityType?.name !== 'deadLetter');
const text = (data: Uint8Array | null | undefined) => (data ? Buffer.from(data).toString('utf8') : '');
const ms = (d: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  Number(d?.seconds ?? 0) * 1000 + Math.round((d?.nanos ?? 0) / 1e6);

const waitsOf = (events: Event[]) =>
  events
    .filter((e) => e.timerStartedEventAttributes)
    .map((e) => ms(e.timerStartedEventAttributes!.startToFireTimeout));

test('held, then resumed by the signal: the call is scheduled again with the whole budget and the attempts left', async () => {
  const { result, events } = await runDispatch(
    input(),
    async (id, attempt) => {
      if (id === 'call-0-after-0') throw attempt === 1 ? unavailable(1) : held(1);
      return { run_id: 'r-1', admission: 'created' };
    },
    async (workflowId) => {
      await heldTimer(workflowId);
      // Held well past nothing: the budget must not run while the tenant is paused.
      await new Promise((r) => setTimeout(r, 1_500));
      await env.client.workflow.getHandle(workflowId).signal(TENANT_RESUMED_SIGNAL);
    },
  );
  expect(result).toEqual({ run_id: 'r-1', admission: 'created' });
  const markers = events.map((e) =>
    text(e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads?.[0]?.data),
  );
  expect(markers.some((m) => m.includes(TENANT_HOLD_PATCH))).toBe(true);
  const [first, again] = calls(events);
  expect(first!.activityId).toBe('call-0-after-0');
  expect(first!.activityType?.name).toBe('postRunWithInputBytes');
  expect(again!.activityId).toBe('call-1-after-1');
  expect(again!.activityType?.name).toBe('postRunReadingInput');
  // Paused before the call was scheduled: none of the budget was used, and one of the five attempts was.
  expect(ms(again!.scheduleToCloseTimeout)).toBe(60_000);
  expect(again!.retryPolicy?.maximumAttempts).toBe(4);
  // The timer is the Web UI's pending wait; its summary says why (user metadata, base64 JSON).
  const timerEvent = events.find((e) => e.timerStartedEventAttributes)!;
  expect(text(timerEvent.userMetadata?.summary?.data)).toContain(
    'held: tenant acme is paused since 2026-12-06T08:00:00.000Z (migration); 1 attempt(s) made',
  );
  if (recordingHistories()) writeHistoryFixture('completed-after-hold', historyToJson({ events }));
});

test('with no signal, a held execution looks again after 10 s, and schedules its call only once resumed', async () => {
  const started = Date.now();
  const { result, events } = await runDispatch(
    input(),
    async (id) => {
      if (id === 'call-0-after-0') throw held(0, null);
      return { run_id: 'r-2', admission: 'created' };
    },
    async (workflowId) => {
      pauseNow = { pausedAt: PAUSED_AT, reason: 'migration' };
      await heldTimer(workflowId);
      // The first look (10 s) finds the tenant paused: no call, a longer wait; the signal then cuts it short.
      for (let i = 0; i < 300 && looks === 0; i++) await new Promise((r) => setTimeout(r, 100));
      pauseNow = null;
      await env.client.workflow.getHandle(workflowId).signal(TENANT_RESUMED_SIGNAL);
    },
  );
  expect(result).toEqual({ run_id: 'r-2', admission: 'created' });
  expect(looks).toBe(2);
  expect(Date.now() - started).toBeGreaterThanOrEqual(10_000);
  expect(calls(events).map((c) => c.activityId)).toEqual(['call-0-after-0', 'call-1-after-0']);
  expect(waitsOf(events)).toEqual([10_000, 20_000]);
  // Each look is a local activity: a marker in the history, no task on a queue.
  const lookMarkers = events.filter(
    (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
  );
  expect(lookMarkers).toHaveLength(2);
});

test('a look that fails leaves the call held until the next look, and the history grows by one look', async () => {
  lookFails = 'tenant pauses: a defect';
  const { result, events } = await runDispatch(
    input(),
    async (id) => {
      if (id === 'call-0-after-0') throw held(0, null);
      return { run_id: 'r-4', admission: 'created' };
    },
    async (workflowId) => {
      // A look retried without end inside the workflow task (extended by Temporal with events) never got here.
      await heldTimer(workflowId, 2, 45_000);
      lookFails = undefined;
      await env.client.workflow.getHandle(workflowId).signal(TENANT_RESUMED_SIGNAL);
    },
  );
  expect(result).toEqual({ run_id: 'r-4', admission: 'created' });
  expect(waitsOf(events)).toEqual([10_000, 20_000]);
  expect(calls(events).map((c) => c.activityId)).toEqual(['call-0-after-0', 'call-1-after-0']);
  const lookMarkers = events.filter(
    (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
  );
  expect(lookMarkers).toHaveLength(2);
  expect(looks).toBeGreaterThanOrEqual(2);
  if (recordingHistories()) writeHistoryFixture('completed-after-failed-look', historyToJson({ events }));
});

test('held again by the same pause after a look saw it over (a worker behind on the pauses): the first wait again', async () => {
  const { result, events } = await runDispatch(input(), async (id) => {
    if (id !== 'call-2-after-0') throw held(0, null);
    return { run_id: 'r-5', admission: 'created' };
  });
  expect(result).toEqual({ run_id: 'r-5', admission: 'created' });
  const ids = calls(events).map((c) => c.activityId);
  expect(ids).toEqual(['call-0-after-0', 'call-1-after-0', 'call-2-after-0']);
  // The look that saw the tenant resumed ends the doubling: a pause of hours must not leave an hour's wait behind.
  expect(waitsOf(events)).toEqual([10_000, 10_000]);
  if (recordingHistories()) writeHistoryFixture('completed-after-second-hold', historyToJson({ events }));
});

test('dead-lettered after a hold: the attempts of both calls are counted, the cap is the whole cap', async () => {
  const { error, deadLetters, events } = await runDispatch(
    input(),
    async (id, attempt) => {
      if (id === 'call-0-after-0') {
        if (attempt <= 2) throw unavailable(attempt);
        throw held(2);
      }
      // The call after the hold reports its attempts counted on, as the worker does (test/unit/heldCall.test.ts).
      throw unavailable(2 + attempt);
    },
    async (workflowId) => {
      await heldTimer(workflowId);
      await env.client.workflow.getHandle(workflowId).signal(TENANT_RESUMED_SIGNAL);
    },
  );
  expect(error).toBeDefined();
  expect(calls(events).map((c) => [c.activityId, c.retryPolicy?.maximumAttempts])).toEqual([
    ['call-0-after-0', 5],
    ['call-1-after-2', 3],
  ]);
  expect(deadLetters).toHaveLength(1);
  expect(deadLetters[0]).toMatchObject({ retryCount: 5, maxRetries: 5, httpStatus: 503 });
  expect(deadLetters[0]!.error).toMatch(/^RETRY_MAX_ATTEMPTS \(5\) spent/);
  if (recordingHistories()) writeHistoryFixture('failed-after-hold', historyToJson({ events }));
});

test('an execution without a budget (started by an earlier ingester) never holds: its call keeps the SDK id', async () => {
  const { result, events } = await runDispatch(
    input({
      attemptTimeoutMs: 2_000,
      initialIntervalMs: 100,
      backoff: 1.5,
      maxIntervalMs: 400,
      maxAttempts: 3,
    }),
    async () => ({ run_id: 'r-3', admission: 'created' }),
  );
  expect(result).toEqual({ run_id: 'r-3', admission: 'created' });
  expect(calls(events).map((c) => c.activityId)).toEqual(['1']);
});
