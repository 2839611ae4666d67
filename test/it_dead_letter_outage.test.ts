/**
 * A dispatch dead-lettered while Kafka is down. Each `deadLetter` attempt that runs out of
 * time must stop publishing, so that when Kafka is back the dispatch has exactly one dead letter, not one per
 * attempt that was still trying. Real Kafka, real Temporal, the relay's real worker process.
 */
import fs from 'node:fs';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { WORKFLOW_TYPE, topics } from '../src/contract';
import { dispatchStartOptions } from '../src/ingest/startDispatch';
import { portInUse } from '../devstack/stack/processes';
import type { DispatchPolicy } from '../src/contract/workflow';
import { directDispatchInput } from './support/directDispatch';
import { readTopicToEnd } from './support/dlqTopic';
import { pauseService, resumeService, startService, stopService } from './support/faults';
import { type Harness, createHarness } from './support/relayHarness';
import { testServices } from './support/testEnv';
import { waitFor } from './support/wait';

/**
 * Above the sum of the named waits below, so a slow step fails naming itself (and what the worker was doing), not
 * as jest's bare timeout.
 */
jest.setTimeout(600_000);

/** Short, so that the outage lasts twice as long in seconds, not minutes (the production value is 60 s). */
const DEAD_LETTER_TIMEOUT_MS = 5_000;

let h: Harness | undefined;
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

/** The retry policy of the dispatches: retried until the API refuses them for good. */
const POLICY: DispatchPolicy = {
  maxAttempts: 1000,
  initialIntervalMs: 200,
  maxIntervalMs: 1000,
  backoff: 2,
  attemptTimeoutMs: 3000,
  deadLetterTimeoutMs: DEAD_LETTER_TIMEOUT_MS,
};

/** The execution's pending `deadLetter` activity, if one is scheduled. */
async function pendingDeadLetter(handle: WorkflowHandle) {
  const { raw } = await handle.describe();
  return raw.pendingActivities?.find((a) => a.activityType?.name === 'deadLetter');
}

/** The attempt number of the execution's pending `deadLetter` activity (0 while none is scheduled). */
async function deadLetterAttempt(handle: WorkflowHandle): Promise<number> {
  return (await pendingDeadLetter(handle))?.attempt ?? 0;
}

/** Each step's start, printed as it comes: a CI log then shows where a slow run stood. */
function phase(outage: string, started: number, what: string): void {
  process.stderr.write(
    `[dead-letter outage: ${outage}] +${((Date.now() - started) / 1000).toFixed(1)} s ${what}\n`,
  );
}

/** What the worker logged about dead letters and Kafka, for a failure's message. */
function workerDeadLetterLines(logFile: string): string {
  return fs
    .readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => /deadLetter|dead letter|dead-letter|kafkajs/.test(line))
    .slice(-20)
    .map((line) => line.slice(0, 400))
    .join('\n');
}

/**
 * `work`, or an error naming `what` after `timeoutMs`, with the pending `deadLetter` attempt, its last failure and
 * the worker's last lines about dead letters.
 */
async function within<T>(
  work: Promise<T>,
  o: { timeoutMs: number; what: string; handle: WorkflowHandle; logFile: string },
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void pendingDeadLetter(o.handle)
        .catch(() => undefined)
        .then((pending) =>
          reject(
            new Error(
              `${o.what}: not within ${o.timeoutMs} ms; pending deadLetter attempt ${pending?.attempt ?? 'none'}, ` +
                `last failure: ${pending?.lastFailure?.message ?? 'none'}; the worker's log:\n` +
                workerDeadLetterLines(o.logFile),
            ),
          ),
        );
    }, o.timeoutMs);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The two ways Kafka is down: killed (connections refused) or hung (connections open, nothing answered). */
const outages = {
  killed: {
    async begin() {
      await stopService('kafka', 'SIGKILL');
    },
    async end() {
      // The killed broker's pid can be gone a moment before the kernel has closed its listening socket.
      const port = Number(testServices().kafkaBrokers[0]!.split(':').pop());
      await waitFor(async () => !(await portInUse(port)), { what: 'the killed broker to release its port' });
      await startService('kafka');
    },
  },
  hung: {
    async begin() {
      pauseService('kafka');
    },
    async end() {
      resumeService('kafka');
    },
  },
};

/**
 * How long each `deadLetter` attempt of the execution that failed or timed out ran, from the SDK's own log line
 * for it in the worker's log ("Activity failed", with durationMs). An attempt that completes after its timeout
 * has no such line.
 */
function failedDeadLetterAttempts(logFile: string, workflowId: string): number[] {
  return fs
    .readFileSync(logFile, 'utf8')
    .split('\n')
    .filter(
      (line) => line.includes('"activityType":"deadLetter"') && line.includes(`"workflowId":"${workflowId}"`),
    )
    .map((line) => (JSON.parse(line) as { durationMs?: number }).durationMs ?? Number.NaN);
}

/** The attempt number of the `deadLetter` attempt whose result the execution recorded. */
async function recordedDeadLetterAttempt(handle: WorkflowHandle): Promise<number> {
  const events = (await handle.fetchHistory()).events ?? [];
  const scheduled = events.find(
    (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'deadLetter',
  );
  const started = events.find(
    (e) =>
      scheduled?.eventId != null &&
      String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(scheduled.eventId),
  );
  return started?.activityTaskStartedEventAttributes?.attempt ?? 0;
}

test.each(['killed', 'hung'] as const)(
  'a dispatch refused while Kafka is %s for twice the deadLetter timeout: no attempt outlives its timeout, exactly one dead letter once Kafka is back, and the execution ends Failed',
  async (outage) => {
    const started = Date.now();
    h = await createHarness();
    const harness = h;
    const worker = await harness.startWorker();
    // A worker that has dead-lettered before: its DLQ producer is connected when the broker goes away.
    harness.api.scriptFor('before-outage', { kind: 'status', status: 422 });
    const before = await harness.client.workflow.start(
      WORKFLOW_TYPE,
      dispatchStartOptions(
        harness.taskQueue,
        directDispatchInput(harness, { key: 'before-outage', policy: POLICY }),
      ),
    );
    await expect(before.result()).rejects.toBeInstanceOf(WorkflowFailedError);

    // The API keeps the dispatch in retries until the broker is down, then refuses it for good.
    harness.api.always({ kind: 'status', status: 503 });
    const handle = await harness.client.workflow.start(
      WORKFLOW_TYPE,
      dispatchStartOptions(
        harness.taskQueue,
        directDispatchInput(harness, { key: 'during-outage', policy: POLICY }),
      ),
    );
    await harness.api.waitFor((a) => a.requestsFor('during-outage').length > 0, 60_000, 'the first call');
    phase(outage, started, 'Kafka going down');
    await outages[outage].begin();
    let attempts: number | undefined;
    try {
      harness.api.always({ kind: 'status', status: 422 });
      await harness.api.waitFor(
        (a) => a.requestsFor('during-outage').some((r) => r.answer === 422),
        60_000,
        'the refusal',
      );
      const refusedAt = Date.now();
      // Down for twice the activity's timeout, and long enough that a third attempt has started.
      attempts = await waitFor(
        async () => {
          const attempt = await deadLetterAttempt(handle);
          return Date.now() - refusedAt >= 2 * DEAD_LETTER_TIMEOUT_MS && attempt >= 3 && attempt;
        },
        { timeoutMs: 120_000, intervalMs: 250, what: 'two deadLetter attempts to end while Kafka is down' },
      );
    } finally {
      phase(outage, started, 'Kafka coming back');
      await outages[outage].end();
    }
    phase(outage, started, 'Kafka back; waiting for the execution to end');
    const diagnosed = { handle, logFile: worker.logFile };
    // The next attempt starts within the activity's longest retry interval (30 s) of Kafka's return.
    const ending = handle.result().then(
      () => undefined,
      (err: unknown) => err,
    );
    const what = 'the execution to end once Kafka is back';
    expect(await within(ending, { ...diagnosed, timeoutMs: 120_000, what })).toBeInstanceOf(
      WorkflowFailedError,
    );
    expect((await handle.describe()).status.name).toBe('FAILED');

    // Once the worker has stopped (gracefully: every activity has returned) nothing more can be written.
    phase(outage, started, 'execution ended; stopping the worker');
    expect(await within(worker.stop(), { ...diagnosed, timeoutMs: 60_000, what: 'the worker to exit' })).toBe(
      0,
    );
    const dlq = await readTopicToEnd(harness.kafka, topics.dlq(harness.tenant));
    const copies = dlq.filter((r) => r?.dispatch_key === 'during-outage');
    const failed = failedDeadLetterAttempts(worker.logFile, handle.workflowId);
    const recorded = await recordedDeadLetterAttempt(handle);
    process.stderr.write(
      `[dead-letter outage: ${outage}] deadLetter attempts while Kafka was down: ${attempts}; recorded attempt ` +
        `${recorded}; earlier attempts ended after ${JSON.stringify(failed)} ms; dead letters for the dispatch: ${copies.length}\n`,
    );
    expect(copies).toHaveLength(1);
    expect(copies[0]).toMatchObject({
      type: 'dispatch_failure',
      http_status: 422,
      run_id: handle.firstExecutionRunId,
    });
    expect(dlq.filter((r) => r?.dispatch_key === 'before-outage')).toHaveLength(1);
    // Every attempt before the recorded one ended (failed) within its start-to-close timeout: none went on
    // publishing after Temporal had given up on it.
    expect(recorded).toBeGreaterThanOrEqual(3);
    expect(failed).toHaveLength(recorded - 1);
    expect(failed.filter((ms) => !(ms < DEAD_LETTER_TIMEOUT_MS))).toEqual([]);
  },
);
