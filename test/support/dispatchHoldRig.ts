/**
 * The rig of the `dispatch` workflow's hold tests (test/host/dispatchHold*.test.ts): a local Temporal dev server
 * (the stack's cached temporal CLI), the workflow bundle, scripted call attempts by activity id and attempt, the
 * worker's look at the tenant's pause as the tests set it, and readers of the history the execution left.
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
  TENANT_PAUSED,
  deadLetterTaskQueue,
} from '../../src/contract/workflow';
import { startWorkflowTestEnv } from './workflowTestEnv';

let env: TestWorkflowEnvironment;
let workflowBundle: { code: string };

/** The dev server and the bundle for the calling test file, started before its tests and torn down after. */
export function useHoldRig(): { client: () => TestWorkflowEnvironment['client'] } {
  beforeAll(async () => {
    ({ env, workflowBundle } = await startWorkflowTestEnv());
  }, 60_000);
  afterAll(async () => {
    await env?.teardown();
  });
  beforeEach(() => {
    look.pauseNow = null;
    look.fails = undefined;
    look.count = 0;
  });
  return { client: () => env.client };
}

export type Event = temporal.api.history.v1.IHistoryEvent;
/** What a call's attempt does, by its activity id and its attempt within that call. */
export type Script = (
  activityId: string,
  attempt: number,
) => Promise<{ run_id: string; admission: 'created' }>;

export const PAUSED_AT = '2026-12-06T08:00:00.000Z';
export const held = (attempt: number, httpStatus: number | null = 503): ApplicationFailure =>
  ApplicationFailure.create({
    type: TENANT_PAUSED,
    message: `held: tenant acme is paused since ${PAUSED_AT} (migration)`,
    nonRetryable: true,
    details: [{ attempt, httpStatus, pausedAt: PAUSED_AT, reason: 'migration' } satisfies TenantHeldDetails],
  });
export const unavailable = (attempt: number) =>
  ApplicationFailure.create({
    type: 'RunsApiUnavailable',
    message: 'HTTP 503',
    details: [{ httpStatus: 503, attempt }],
  });

export const BUDGETED = {
  attemptTimeoutMs: 2_000,
  initialIntervalMs: 100,
  backoff: 1.5,
  maxIntervalMs: 400,
  maxAttempts: 20,
  maxDurationMs: 60_000,
  attemptCap: 5,
};
export const input = (policy: DispatchInput['policy'] = BUDGETED): DispatchInput => ({
  tenant: 'acme',
  dispatch: { workflow_ref: 'onboarding@v3', goal_id: null, dispatch_key: `d-${uuid()}`, input_json: '{}' },
  source: { topic: 'poimen.acme.dispatch', partition: 0, offset: '7', timestamp: '1700000000000' },
  policy,
});

/** The worker's look (`tenantPauseOf`): what it answers (null: resumed), whether it fails, how often it ran. */
export const look: { pauseNow: TenantHoldState | null; fails: string | undefined; count: number } = {
  pauseNow: null,
  fails: undefined,
  count: 0,
};

export async function runDispatch(
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
        look.count += 1;
        if (look.fails) throw new Error(look.fails);
        return look.pauseNow;
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

export const isHoldTimer = (e: Event): boolean =>
  !!e.timerStartedEventAttributes && text(e.userMetadata?.summary?.data).includes('held:');

/** Waits until the execution is held: its `nth` wait for the resume has started (within 20 s of the call). */
export async function heldTimer(
  workflowId: string,
  nth = 1,
  timeoutMs = 20_000,
): Promise<temporal.api.history.v1.ITimerStartedEventAttributes> {
  for (const until = Date.now() + timeoutMs; Date.now() < until;) {
    const { events } = await env.client.workflow.getHandle(workflowId).fetchHistory();
    // A hold's wait says why in its summary; the dead letter's wait for the budget's end has none.
    const timer = events?.filter(isHoldTimer)[nth - 1];
    if (timer) return timer.timerStartedEventAttributes!;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the execution never started wait ${nth} for the resume`);
}

export const calls = (events: Event[]) =>
  events
    .map((e) => e.activityTaskScheduledEventAttributes)
    .filter((a): a is temporal.api.history.v1.IActivityTaskScheduledEventAttributes => !!a)
    .filter((a) => a.activityType?.name !== 'deadLetter');
export const text = (data: Uint8Array | null | undefined) => (data ? Buffer.from(data).toString('utf8') : '');
export const ms = (d: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  Number(d?.seconds ?? 0) * 1000 + Math.round((d?.nanos ?? 0) / 1e6);

export const waitsOf = (events: Event[]) =>
  events
    .filter((e) => e.timerStartedEventAttributes)
    .map((e) => ms(e.timerStartedEventAttributes!.startToFireTimeout));
