/* eslint-disable max-lines -- the workflow's cases share one test environment and worker */
/**
 * The `dispatch` workflow's logic with mocked activities on a local Temporal dev server (the stack's cached
 * temporal CLI, started by the SDK's test environment): which activity it schedules and with what, the retry
 * policy it gives the call, and the dead letter after a refusal. Seconds, not the minutes of the integration
 * suites. The SDK's own CLI download cannot work here, so the cached binary is required: provision it first.
 */
import { randomUUID as uuid } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import {
  type DeadLetterInput,
  type DispatchInput,
  type PostRunHeadInput,
  deadLetterTaskQueue,
  largeInputTaskQueue,
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

interface Calls {
  postRun: unknown[][];
  postRunWithInputBytes: [PostRunHeadInput, Uint8Array][];
  postRunReadingInput: PostRunHeadInput[];
  deadLetter: DeadLetterInput[];
  deadLetterAt: number[];
}

type PostRunImpl = (attempt: number) => Promise<{ run_id: string; admission: 'created' | 'existing' }>;

async function runDispatch(input: DispatchInput, post: PostRunImpl) {
  const calls: Calls = {
    postRun: [],
    postRunWithInputBytes: [],
    postRunReadingInput: [],
    deadLetter: [],
    deadLetterAt: [],
  };
  let attempts = 0;
  const taskQueue = `unit-${uuid()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle,
    activities: {
      postRun: async (...args: unknown[]) => {
        calls.postRun.push(args);
        return post(++attempts);
      },
      postRunWithInputBytes: async (head: PostRunHeadInput, bytes: Uint8Array) => {
        calls.postRunWithInputBytes.push([head, bytes]);
        return post(++attempts);
      },
      deadLetter: async () => {
        throw new Error('deadLetter belongs on its own queue');
      },
    },
  });
  // Dead letters have their own queue; a worker polls it in every worker process.
  const deadLetterWorker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue: deadLetterTaskQueue(taskQueue),
    activities: {
      deadLetter: async (dl: DeadLetterInput) => {
        calls.deadLetter.push(dl);
        calls.deadLetterAt.push(Date.now());
      },
    },
  });
  // Calls with a large input have their own queue too (contract §4).
  const largeInputWorker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue: largeInputTaskQueue(taskQueue),
    activities: {
      postRunReadingInput: async (head: PostRunHeadInput) => {
        calls.postRunReadingInput.push(head);
        return post(++attempts);
      },
    },
  });
  const workflowId = `dispatch:${input.tenant}:${input.dispatch.dispatch_key}-${uuid()}`;
  const execution = env.client.workflow
    .execute('dispatch', { taskQueue, workflowId, args: [input] })
    .then((result) => ({ result, error: undefined as unknown }))
    .catch((error: unknown) => ({ result: undefined, error }));
  const [outcome] = await Promise.all([
    worker.runUntil(execution),
    deadLetterWorker.runUntil(execution),
    largeInputWorker.runUntil(execution),
  ]);
  const { events } = await env.client.workflow.getHandle(workflowId).fetchHistory();
  return { ...outcome, calls, events: events ?? [], workflowId };
}

const POLICY = {
  attemptTimeoutMs: 2_000,
  initialIntervalMs: 100,
  backoff: 1.5,
  maxIntervalMs: 400,
  maxAttempts: 3,
};
const INPUT_TEXT = '{"user": 9007199254740993}';
const input = (over: Partial<DispatchInput> = {}): DispatchInput => ({
  tenant: 'acme',
  dispatch: { workflow_ref: 'onboarding@v3', goal_id: 'g-1', dispatch_key: 'd-1', input_json: INPUT_TEXT },
  source: { topic: 'poimen.acme.dispatch', partition: 0, offset: '7', timestamp: '1700000000000' },
  policy: POLICY,
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  ...over,
});

function scheduled(events: temporal.api.history.v1.IHistoryEvent[]) {
  return events
    .map((e) => e.activityTaskScheduledEventAttributes)
    .filter((a): a is temporal.api.history.v1.IActivityTaskScheduledEventAttributes => !!a);
}

describe('the dispatch workflow', () => {
  test('schedules postRunWithInputBytes(head, input bytes) behind the patch, with the policy as retry policy, and returns its answer', async () => {
    const { result, error, calls, events } = await runDispatch(input(), async () => ({
      run_id: 'r-1',
      admission: 'created',
    }));
    expect(error).toBeUndefined();
    expect(result).toEqual({ run_id: 'r-1', admission: 'created' });
    expect(calls.postRun).toEqual([]);
    expect(calls.deadLetter).toEqual([]);
    expect(calls.postRunWithInputBytes).toHaveLength(1);
    const [head, bytes] = calls.postRunWithInputBytes[0]!;
    expect(head).toEqual({
      tenant: 'acme',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      attemptTimeoutMs: 2_000,
      recordTimestampMs: 1_700_000_000_000,
      dispatch: { workflow_ref: 'onboarding@v3', goal_id: 'g-1', dispatch_key: 'd-1' },
    });
    expect(Buffer.from(bytes).toString('utf8')).toBe(INPUT_TEXT);
    // The patch is recorded, so this execution replays into the same branch.
    const markers = events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch');
    expect(markers).toHaveLength(1);
    const [call] = scheduled(events);
    expect(call!.activityType?.name).toBe('postRunWithInputBytes');
    const rp = call!.retryPolicy!;
    expect(rp.maximumAttempts).toBe(3);
    expect(rp.backoffCoefficient).toBe(1.5);
    expect(
      Number(rp.initialInterval?.nanos ?? 0) / 1e6 + Number(rp.initialInterval?.seconds ?? 0) * 1e3,
    ).toBe(100);
    expect(
      Number(rp.maximumInterval?.nanos ?? 0) / 1e6 + Number(rp.maximumInterval?.seconds ?? 0) * 1e3,
    ).toBe(400);
    expect(rp.nonRetryableErrorTypes).toEqual(['RunsApiRejected']);
    // The HTTP timeout fires first; the start-to-close bound only catches a worker that died mid-call.
    expect(Number(call!.startToCloseTimeout?.seconds)).toBe(7);
  });

  test('a retryable failure is retried by Temporal until it succeeds', async () => {
    const { result, calls } = await runDispatch(input(), async (attempt) => {
      if (attempt < 3) throw ApplicationFailure.create({ type: 'RunsApiUnavailable', message: '503' });
      return { run_id: 'r-3', admission: 'existing' };
    });
    expect(result).toEqual({ run_id: 'r-3', admission: 'existing' });
    expect(calls.postRunWithInputBytes).toHaveLength(3);
    expect(calls.deadLetter).toEqual([]);
  });

  test('a non-retryable refusal is dead-lettered once with the status and attempt, and the execution fails DispatchFailed', async () => {
    const { error, calls } = await runDispatch(input(), async (attempt) => {
      throw ApplicationFailure.create({
        type: 'RunsApiRejected',
        message: 'runs API answered 422',
        nonRetryable: true,
        details: [{ httpStatus: 422, attempt }],
      });
    });
    expect(calls.postRunWithInputBytes).toHaveLength(1);
    expect(calls.deadLetter).toHaveLength(1);
    const dl = calls.deadLetter[0]!;
    expect(dl).toMatchObject({
      tenant: 'acme',
      dispatchKey: 'd-1',
      source: input().source,
      error: 'runs API answered 422',
      httpStatus: 422,
      retryCount: 1,
      maxRetries: 3,
    });
    expect(dl.workflowId).toMatch(/^dispatch:acme:d-1-/);
    expect(dl.workflowRunId).toMatch(/^[0-9a-f-]{36}$/);
    expect(error).toBeInstanceOf(WorkflowFailedError);
    const cause = (error as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause.type).toBe('DispatchFailed');
    expect(cause.nonRetryable).toBe(true);
  });

  test('retries exhausted: dead-lettered with retry_count = max attempts', async () => {
    const { error, calls } = await runDispatch(input(), async (attempt) => {
      throw ApplicationFailure.create({
        type: 'RunsApiUnavailable',
        message: 'runs API answered 503',
        details: [{ httpStatus: 503, attempt }],
      });
    });
    expect(calls.postRunWithInputBytes).toHaveLength(3);
    expect(calls.deadLetter).toHaveLength(1);
    expect(calls.deadLetter[0]).toMatchObject({ httpStatus: 503, retryCount: 3, maxRetries: 3 });
    expect(((error as WorkflowFailedError).cause as ApplicationFailure).type).toBe('DispatchFailed');
  });

  describe('with a retry budget (RETRY_MAX_DURATION_MS)', () => {
    const BUDGET = { ...POLICY, maxAttempts: 40, maxDurationMs: 3_000, attemptCap: 0 };
    const ms = (d: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
      Number(d?.seconds ?? 0) * 1e3 + Number(d?.nanos ?? 0) / 1e6;
    const unavailable = (attempt: number) =>
      ApplicationFailure.create({
        type: 'RunsApiUnavailable',
        message: 'runs API answered 503',
        details: [{ httpStatus: 503, attempt }],
      });

    test('the call is bounded by the budget (schedule-to-close), has no count limit, and heartbeats', async () => {
      const policy = { ...BUDGET, maxDurationMs: 60_000 };
      const { result, events } = await runDispatch(input({ policy }), async () => ({
        run_id: 'r-1',
        admission: 'created',
      }));
      expect(result).toEqual({ run_id: 'r-1', admission: 'created' });
      const [call] = scheduled(events);
      expect(ms(call!.scheduleToCloseTimeout)).toBe(60_000);
      expect(ms(call!.heartbeatTimeout)).toBe(2_000 + 20_000);
      expect(call!.retryPolicy!.maximumAttempts ?? 0).toBe(0);
    });

    test('spent: dead-lettered on its own queue no earlier than start + budget, the error naming the budget', async () => {
      const started = Date.now();
      const { error, calls, events } = await runDispatch(input({ policy: BUDGET }), async (attempt) => {
        throw unavailable(attempt);
      });
      expect(calls.deadLetter).toHaveLength(1);
      expect(calls.deadLetterAt[0]! - started).toBeGreaterThanOrEqual(3_000);
      const attempts = calls.postRunWithInputBytes.length;
      // The dev server's retry timers fire about once a second, whatever the shorter policy intervals say.
      expect(attempts).toBeGreaterThanOrEqual(2);
      expect(calls.deadLetter[0]).toMatchObject({ httpStatus: 503, retryCount: attempts, maxRetries: 0 });
      expect(calls.deadLetter[0]!.error).toBe(
        `retry budget of 3 s spent (RETRY_MAX_DURATION_MS) after ${attempts} attempt(s); last: runs API answered 503`,
      );
      const deadLetter = scheduled(events).find((a) => a.activityType?.name === 'deadLetter');
      expect(deadLetter!.taskQueue?.name).toMatch(/-deadletter$/);
      const cause = (error as WorkflowFailedError).cause as ApplicationFailure;
      expect(cause.type).toBe('DispatchFailed');
      expect(cause.details?.[0]).toMatchObject({ max_retries: null, retry_count: attempts });
    });

    test('a positive RETRY_MAX_ATTEMPTS still caps, and the dead letter names it', async () => {
      const { calls } = await runDispatch(
        input({ policy: { ...BUDGET, maxDurationMs: 60_000, attemptCap: 2 } }),
        async (attempt) => {
          throw unavailable(attempt);
        },
      );
      expect(calls.postRunWithInputBytes).toHaveLength(2);
      expect(calls.deadLetter[0]).toMatchObject({ retryCount: 2, maxRetries: 2 });
      expect(calls.deadLetter[0]!.error).toBe('RETRY_MAX_ATTEMPTS (2) spent; last: runs API answered 503');
    });

    test('spent: the dead letter waits until a second past the budget’s end by the workflow’s clock', async () => {
      const policy = { ...BUDGET, maxDurationMs: 5_000 };
      // A Retry-After past the budget: Temporal gives up at once, long before the budget's end.
      const { calls, events } = await runDispatch(input({ policy }), async (attempt) => {
        throw ApplicationFailure.create({
          type: 'RunsApiUnavailable',
          message: 'runs API answered 503',
          details: [{ httpStatus: 503, attempt }],
          nextRetryDelay: '1 minute',
        });
      });
      expect(calls.postRunWithInputBytes).toHaveLength(1);
      expect(calls.deadLetter).toHaveLength(1);
      const byId = new Map(events.map((e) => [Number(e.eventId), e]));
      // The workflow's clock is the start of the workflow task it runs in, in whole milliseconds (event times
      // carry microseconds): the two readings each lose less than one.
      const clockOf = (completedId: unknown) => {
        const completed = byId.get(Number(completedId))?.workflowTaskCompletedEventAttributes;
        return ms(byId.get(Number(completed?.startedEventId))?.eventTime);
      };
      const first = ms(events.find((e) => e.workflowTaskStartedEventAttributes)?.eventTime);
      const timer = events.find((e) => e.timerStartedEventAttributes)?.timerStartedEventAttributes;
      const firesAt = clockOf(timer?.workflowTaskCompletedEventId) + ms(timer?.startToFireTimeout);
      expect(Math.abs(firesAt - first - (policy.maxDurationMs + 1_000))).toBeLessThan(1);
      const deadLetter = scheduled(events).find((a) => a.activityType?.name === 'deadLetter')!;
      expect(clockOf(deadLetter.workflowTaskCompletedEventId) - first).toBeGreaterThan(
        policy.maxDurationMs + 999,
      );
    });
  });

  describe('an input over 32 KiB (contract §4)', () => {
    const sized = (bytes: number) => {
      const text = JSON.stringify({ blob: 'x'.repeat(bytes - '{"blob":""}'.length) });
      expect(Buffer.byteLength(text)).toBe(bytes);
      return input({ dispatch: { ...input().dispatch, input_json: text } });
    };
    const queues = (events: temporal.api.history.v1.IHistoryEvent[]) =>
      scheduled(events).map((a) => [
        a.activityType?.name,
        a.taskQueue?.name?.replace(/^unit-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}/, 'tq'),
      ]);

    test('is not scheduled: postRunReadingInput(head) runs on the -large queue and reads it', async () => {
      const { result, calls, events } = await runDispatch(sized(32 * 1024 + 1), async () => ({
        run_id: 'r-l',
        admission: 'created',
      }));
      expect(result).toEqual({ run_id: 'r-l', admission: 'created' });
      expect(queues(events)).toEqual([['postRunReadingInput', 'tq-large']]);
      expect(calls.postRunWithInputBytes).toEqual([]);
      expect(calls.postRunReadingInput).toEqual([
        expect.objectContaining({
          tenant: 'acme',
          dispatch: { workflow_ref: 'onboarding@v3', goal_id: 'g-1', dispatch_key: 'd-1' },
        }),
      ]);
      // Its history replays: the size decides the branch again, behind its patch. Recorded as a fixture
      // (POIMEN_RECORD_HISTORIES=1), replay.test.ts keeps replaying it against later workflow code.
      await expect(
        Worker.runReplayHistory({ workflowBundle, replayName: 'large-input' }, { events }),
      ).resolves.toBeUndefined();
      if (recordingHistories()) writeHistoryFixture('completed-large-input', historyToJson({ events }));
    });

    test('of exactly 32 KiB, or smaller, keeps the main queue and carries its bytes', async () => {
      for (const bytes of [32 * 1024, 1_024]) {
        const { calls, events } = await runDispatch(sized(bytes), async () => ({
          run_id: 'r-s',
          admission: 'created',
        }));
        expect(queues(events)).toEqual([['postRunWithInputBytes', 'tq']]);
        expect(calls.postRunWithInputBytes[0]![1].byteLength).toBe(bytes);
      }
    });
  });

  test('an execution started by an earlier ingester (parsed input) schedules postRun with the whole dispatch', async () => {
    const legacy = { workflow_ref: 'onboarding@v3', goal_id: null, dispatch_key: 'd-2', input: { a: [1] } };
    const { result, calls } = await runDispatch(input({ dispatch: legacy }), async () => ({
      run_id: 'r-2',
      admission: 'created',
    }));
    expect(result).toEqual({ run_id: 'r-2', admission: 'created' });
    expect(calls.postRunWithInputBytes).toEqual([]);
    expect(calls.postRun).toHaveLength(1);
    expect(calls.postRun[0]).toEqual([
      expect.objectContaining({ tenant: 'acme', dispatch: legacy, attemptTimeoutMs: 2_000 }),
    ]);
  });
});
