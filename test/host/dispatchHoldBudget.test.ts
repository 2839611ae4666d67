/**
 * A holdable call whose budget runs out at the server while its tenant is paused (contract/workflow.ts,
 * BUDGET_SPENT_PAUSED_PATCH): the attempt that would have brought the pause back did not run in time (in the retry
 * backoff, queued with every worker down, or held a moment after the budget's end), and the execution looks at the
 * pause before the dead letter. Paused before the budget ended: held, and the resume schedules the call with the
 * budget from the pause on. Paused after it, or a look that fails: dead-lettered as before. Scripted activities on
 * a local Temporal dev server (test/support/dispatchHoldRig.ts).
 */
import { Context } from '@temporalio/activity';
import {
  BUDGET_SPENT_PAUSED_PATCH,
  type DispatchInput,
  TENANT_RESUMED_SIGNAL,
} from '../../src/contract/workflow';
import {
  calls,
  held,
  heldTimer,
  isHoldTimer,
  input,
  look,
  ms,
  runDispatch,
  text,
  unavailable,
  useHoldRig,
} from '../support/dispatchHoldRig';
import { historyToJson } from '../support/histories';
import { recordingHistories, writeHistoryFixture } from '../support/recordHistories';

const rig = useHoldRig();

/** No attempts cap: with every attempt answered 503 the budget ends the call (retries at 0, 0.5, 1.5 s; 3.5 is past it). */
const SHORT_BUDGET: DispatchInput['policy'] = {
  attemptTimeoutMs: 2_000,
  initialIntervalMs: 500,
  backoff: 2,
  maxIntervalMs: 2_000,
  maxAttempts: 20,
  maxDurationMs: 3_000,
};

test('the budget runs out while the tenant is paused: held, not dead-lettered; resumed with the budget from the pause on', async () => {
  // Paused as the second attempt runs; no attempt after it brings the pause back before the budget's end.
  let pausedAt = 0;
  let spentAttempts = 0;
  const { result, deadLetters, events } = await runDispatch(
    input(SHORT_BUDGET),
    async (id, attempt) => {
      if (id === 'call-0-after-0') {
        spentAttempts = attempt;
        if (attempt === 2) {
          pausedAt = Date.now();
          look.pauseNow = { pausedAt: new Date(pausedAt).toISOString(), reason: 'migration' };
        }
        throw unavailable(attempt);
      }
      return { run_id: 'r-6', admission: 'created' };
    },
    async (workflowId) => {
      await heldTimer(workflowId);
      look.pauseNow = null;
      await rig.client().workflow.getHandle(workflowId).signal(TENANT_RESUMED_SIGNAL);
    },
  );
  expect(deadLetters).toEqual([]);
  expect(result).toEqual({ run_id: 'r-6', admission: 'created' });
  const markers = events.map((e) =>
    text(e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads?.[0]?.data),
  );
  // The patch is reached only by a call that ended with its budget spent.
  expect(markers.some((m) => m.includes(BUDGET_SPENT_PAUSED_PATCH))).toBe(true);
  const [first, again] = calls(events);
  expect(first!.activityId).toBe('call-0-after-0');
  // The call after the hold numbers its attempts after those the first made, and gets what the budget had left
  // when the tenant was paused: the workflow's clock started the budget at its first task.
  expect(spentAttempts).toBeGreaterThanOrEqual(2);
  expect(again!.activityId).toBe(`call-1-after-${spentAttempts}`);
  const budgetFrom = ms(events.find((e) => e.workflowTaskStartedEventAttributes)!.eventTime);
  const left = 3_000 - (pausedAt - budgetFrom);
  expect(left).toBeLessThan(2_900);
  expect(Math.abs(ms(again!.scheduleToCloseTimeout) - left)).toBeLessThanOrEqual(50);
  const timer = events.find(isHoldTimer)!;
  expect(text(timer.userMetadata?.summary?.data)).toContain(`${spentAttempts} attempt(s) made`);
  if (recordingHistories())
    writeHistoryFixture('completed-after-budget-spent-hold', historyToJson({ events }));
});

test('paused only after the budget ended: dead-lettered as the budget says', async () => {
  look.pauseNow = { pausedAt: new Date(Date.now() + 3_600_000).toISOString(), reason: 'later' };
  const { error, deadLetters, events } = await runDispatch(input(SHORT_BUDGET), async (_, attempt) => {
    throw unavailable(attempt);
  });
  expect(error).toBeDefined();
  expect(look.count).toBe(1);
  expect(deadLetters).toHaveLength(1);
  expect(deadLetters[0]!.error).toMatch(/^retry budget of 3 s spent/);
  // No hold: the only timer is the dead letter's wait for the budget's end, with no summary of a hold.
  expect(events.filter((e) => text(e.userMetadata?.summary?.data).includes('held:'))).toEqual([]);
  expect(calls(events)).toHaveLength(1);
  if (recordingHistories()) writeHistoryFixture('failed-budget-spent-after-look', historyToJson({ events }));
});

test('a look that fails at the budget end: dead-lettered, as without the look', async () => {
  look.fails = 'tenant pauses: a defect';
  const { error, deadLetters } = await runDispatch(input(SHORT_BUDGET), async (_, attempt) => {
    throw unavailable(attempt);
  });
  expect(error).toBeDefined();
  expect(look.count).toBeGreaterThanOrEqual(1);
  expect(deadLetters).toHaveLength(1);
  expect(deadLetters[0]!.error).toMatch(/^retry budget of 3 s spent/);
});

test('paused after Temporal gave up on the call but before its budget ended: held (the look waits for the end)', async () => {
  // Temporal ends the call when its next retry would start past the budget (3.5 s of 3 s): at ~1.5 s.
  let pausedAt = 0;
  const { result, deadLetters, events } = await runDispatch(
    input(SHORT_BUDGET),
    async (id, attempt) => {
      if (id === 'call-0-after-0') throw unavailable(attempt);
      return { run_id: 'r-7', admission: 'created' };
    },
    async (workflowId) => {
      const handle = rig.client().workflow.getHandle(workflowId);
      // Paused once the execution has handled the call's end (a workflow task completed after it).
      for (let i = 0; i < 100; i++) {
        const now = (await handle.fetchHistory()).events ?? [];
        const ended = now.findIndex((e) => e.activityTaskFailedEventAttributes);
        if (ended >= 0 && now.slice(ended).some((e) => e.workflowTaskCompletedEventAttributes)) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      pausedAt = Date.now();
      look.pauseNow = { pausedAt: new Date(pausedAt).toISOString(), reason: 'late' };
      await heldTimer(workflowId);
      look.pauseNow = null;
      await handle.signal(TENANT_RESUMED_SIGNAL);
    },
  );
  expect(deadLetters).toEqual([]);
  expect(result).toEqual({ run_id: 'r-7', admission: 'created' });
  const budgetFrom = ms(events.find((e) => e.workflowTaskStartedEventAttributes)!.eventTime);
  expect(pausedAt - budgetFrom).toBeLessThan(3_000);
  expect(calls(events).map((c) => c.activityId)).toEqual(['call-0-after-0', 'call-1-after-3']);
});

test("a held failure that reaches the server after the call's budget ended (a starved worker): held, counting the attempt its heartbeat lists", async () => {
  // Attempt 2 calls, records its failure in a heartbeat as the worker does (attemptLog.ts), and is late: the server
  // ends the call on its budget with attempt 1's failure as the cause.
  const { result, deadLetters, events } = await runDispatch(
    input(SHORT_BUDGET),
    async (id, attempt) => {
      if (id !== 'call-0-after-0') return { run_id: 'r-8', admission: 'created' };
      if (attempt === 1) throw unavailable(1);
      const at = new Date().toISOString();
      look.pauseNow = { pausedAt: at, reason: 'starved' };
      const entry = (n: number) => ({ attempt: n, at, http_status: 503, error: 'HTTP 503', duration_ms: 5 });
      Context.current().heartbeat({
        attempts: [entry(1), entry(2)],
        attempts_omitted: 0,
        current: { attempt: 2, at },
      });
      await new Promise((r) => setTimeout(r, 4_000));
      throw held(2);
    },
    async (workflowId) => {
      await heldTimer(workflowId);
      look.pauseNow = null;
      await rig.client().workflow.getHandle(workflowId).signal(TENANT_RESUMED_SIGNAL);
    },
  );
  expect(deadLetters).toEqual([]);
  expect(result).toEqual({ run_id: 'r-8', admission: 'created' });
  expect(events.some((e) => e.activityTaskTimedOutEventAttributes)).toBe(true);
  expect(calls(events).map((c) => c.activityId)).toEqual(['call-0-after-0', 'call-1-after-2']);
});

test('the attempts cap reached as the budget ran out: dead-lettered, not held for one attempt past the cap', async () => {
  look.pauseNow = { pausedAt: new Date().toISOString(), reason: 'capped' };
  const { error, deadLetters } = await runDispatch(
    input({ ...SHORT_BUDGET, attemptCap: 2 }),
    async (_, attempt) => {
      if (attempt === 1) throw unavailable(1);
      // The capped attempt waits on the breaker (its heartbeat names it) until the budget ends.
      const at = new Date().toISOString();
      for (let i = 0; i < 8; i++) {
        Context.current().heartbeat({ waitingOnBreaker: true, openSince: at, httpStatus: 503, attempt: 2 });
        await new Promise((r) => setTimeout(r, 500));
      }
      throw unavailable(2);
    },
  );
  expect(error).toBeDefined();
  expect(deadLetters).toHaveLength(1);
  expect(deadLetters[0]).toMatchObject({ retryCount: 2 });
});
