/**
 * The `dispatch` workflow holding its call while the tenant is paused (contract/workflow.ts, TENANT_HOLD_PATCH), with
 * scripted activities on a local Temporal dev server (the stack's cached temporal CLI): the wait for the resume
 * signal or the next look, the budget and attempts the call scheduled after it gets, and the dead letter's count.
 * The worker's side of a hold is test/unit/heldCall.test.ts; the whole relay's, test/it_tenant_hold.test.ts.
 */
import { TENANT_HOLD_PATCH, TENANT_RESUMED_SIGNAL } from '../../src/contract/workflow';
import {
  PAUSED_AT,
  calls,
  held,
  heldTimer,
  input,
  look,
  ms,
  runDispatch,
  text,
  unavailable,
  useHoldRig,
  waitsOf,
} from '../support/dispatchHoldRig';
import { historyToJson } from '../support/histories';
import { recordingHistories, writeHistoryFixture } from '../support/recordHistories';

const rig = useHoldRig();
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
      await rig.client().workflow.getHandle(workflowId).signal(TENANT_RESUMED_SIGNAL);
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
      look.pauseNow = { pausedAt: PAUSED_AT, reason: 'migration' };
      await heldTimer(workflowId);
      // The first look (10 s) finds the tenant paused: no call, a longer wait; the signal then cuts it short.
      for (let i = 0; i < 300 && look.count === 0; i++) await new Promise((r) => setTimeout(r, 100));
      look.pauseNow = null;
      await rig.client().workflow.getHandle(workflowId).signal(TENANT_RESUMED_SIGNAL);
    },
  );
  expect(result).toEqual({ run_id: 'r-2', admission: 'created' });
  expect(look.count).toBe(2);
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
  look.fails = 'tenant pauses: a defect';
  const { result, events } = await runDispatch(
    input(),
    async (id) => {
      if (id === 'call-0-after-0') throw held(0, null);
      return { run_id: 'r-4', admission: 'created' };
    },
    async (workflowId) => {
      // A look retried without end inside the workflow task (extended by Temporal with events) never got here.
      await heldTimer(workflowId, 2, 45_000);
      look.fails = undefined;
      await rig.client().workflow.getHandle(workflowId).signal(TENANT_RESUMED_SIGNAL);
    },
  );
  expect(result).toEqual({ run_id: 'r-4', admission: 'created' });
  expect(waitsOf(events)).toEqual([10_000, 20_000]);
  expect(calls(events).map((c) => c.activityId)).toEqual(['call-0-after-0', 'call-1-after-0']);
  const lookMarkers = events.filter(
    (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
  );
  expect(lookMarkers).toHaveLength(2);
  expect(look.count).toBeGreaterThanOrEqual(2);
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
      await rig.client().workflow.getHandle(workflowId).signal(TENANT_RESUMED_SIGNAL);
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
