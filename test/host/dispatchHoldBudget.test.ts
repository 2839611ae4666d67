/**
 * A holdable call whose budget runs out at the server while its tenant is paused (contract/workflow.ts,
 * BUDGET_SPENT_PAUSED_PATCH): the attempt that would have brought the pause back did not run in time (in the retry
 * backoff, queued with every worker down, or held a moment after the budget's end), and the execution looks at the
 * pause before the dead letter. Paused before the budget ended: held, and the resume schedules the call with the
 * budget from the pause on. Paused after it, or a look that fails: dead-lettered as before. Scripted activities on
 * a local Temporal dev server (test/support/dispatchHoldRig.ts).
 */
import {
  BUDGET_SPENT_PAUSED_PATCH,
  type DispatchInput,
  TENANT_RESUMED_SIGNAL,
} from '../../src/contract/workflow';
import {
  calls,
  heldTimer,
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
  const timer = events.find((e) => e.timerStartedEventAttributes)!;
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
