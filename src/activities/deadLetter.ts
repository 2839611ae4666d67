/**
 * `deadLetter`: publishes the contract §6 record of a failed dispatch through the process's shared producer,
 * carrying the source record as consumed when Kafka still holds it.
 */
import { Context } from '@temporalio/activity';
import {
  type Dispatch,
  type LegacyDispatch,
  REDRIVE_COUNT_HEADER,
  type RecordHeaders,
  buildDlqRecord,
  dispatchRecordKey,
  dlqRecordId,
  runsApiBody,
  validateDispatch,
} from '../contract';
import { attemptError, emptyHistory, throughAttempt } from '../contract/attempts';
import { secretRedactor } from '../redact';
import type { DeadLetterInput } from '../contract/workflow';
import { bodyExcerpt } from './classify';
import type { ActivityDeps } from './deps';

/** Share of a `deadLetter` attempt's start-to-close timeout it spends publishing before it gives up. */
const DEAD_LETTER_TIME_SHARE = 0.9;
/**
 * Share of the attempt's start-to-close timeout the source record's read may take: the rest is the publish's, so
 * reads that wait (a burst of dead letters, a slow broker) make dead letters with a rebuilt payload, never none.
 */
const SOURCE_READ_TIME_SHARE = 0.4;

/** The attempt's two deadlines: the whole attempt's, and the source read's within it. */
interface AttemptSignals {
  attempt: AbortSignal;
  read: AbortSignal;
}

/** What a `dispatch_failure` id is derived from: the dispatch (its workflow id) and its source record. */
export function failureSeed(input: Pick<DeadLetterInput, 'workflowId' | 'source'>): string {
  const s = input.source;
  return `${input.workflowId}/${s.topic}/${s.partition}/${s.offset}/${s.timestamp}`;
}

export function createDeadLetter(deps: ActivityDeps) {
  const target = `${deps.runsApi.url}/v1/runs`;
  const redact = secretRedactor(deps.runsApi.token);

  /**
   * The record a dead letter carries: the source record as consumed (value, key, headers; contract §6), read back
   * from Kafka by its coordinates and checked to be this dispatch. When it cannot be (retention deleted it, a
   * topic made anew, no read access), the four-field body rebuilt from the workflow input, and why.
   */
  async function original(
    input: DeadLetterInput,
    dispatchKey: string,
    signal: AbortSignal,
  ): Promise<{ value: Uint8Array | string; key?: Uint8Array | null; headers?: RecordHeaders; note: string }> {
    let why: string;
    try {
      // Bounded by its share of the attempt: a read given up on stops, and leaves the publish its time.
      const found = await deps.sourceRecord(input.source, signal);
      const verdict = found && validateDispatch(found.value, { tenant: input.tenant, maxBytes: Infinity });
      if (found && verdict?.ok && verdict.dispatch.dispatch_key === dispatchKey) {
        return { value: found.value!, key: found.key, headers: found.headers, note: '' };
      }
      why = found ? 'holds another record' : 'is no longer in Kafka';
    } catch (err) {
      why = signal.aborted
        ? 'could not be read in time'
        : `could not be read (${err instanceof Error ? err.message : String(err)})`;
    }
    // Executions that carry the dispatch itself started before redrives existed: no count to keep.
    const started = input.dispatch
      ? undefined
      : await deps.startedWith(input.workflowId, input.workflowRunId);
    const dispatch: Dispatch | LegacyDispatch = input.dispatch ?? started!.input.dispatch;
    const redrives = started?.redriveCount ?? 0;
    const s = input.source;
    return {
      value: runsApiBody(dispatch),
      // The source record's redrive count, kept by the start memo: the next redrive reads it from these headers.
      ...(redrives > 0 ? { headers: { [REDRIVE_COUNT_HEADER]: String(redrives) } } : {}),
      note: ` [payload rebuilt from the workflow input: ${s.topic} partition ${s.partition} offset ${s.offset} ${why}]`,
    };
  }

  async function deadLetter(input: DeadLetterInput): Promise<void> {
    const ctx = Context.current();
    // Give up inside the attempt's own timeout, so it ends as a retryable failure and nothing keeps publishing
    // once Temporal has moved on to the next attempt; Temporal's cancellation (a heartbeat's answer, worker
    // shutdown, or core's local start-to-close timer) stops it too. A timer, not AbortSignal.timeout: a timeout
    // signal referenced only by AbortSignal.any can be garbage-collected and never fire.
    const timeoutMs = ctx.info.startToCloseTimeoutMs;
    const deadline = new AbortController();
    const readDeadline = new AbortController();
    const timers = [
      setTimeout(() => deadline.abort(), timeoutMs * DEAD_LETTER_TIME_SHARE),
      setTimeout(() => readDeadline.abort(), timeoutMs * SOURCE_READ_TIME_SHARE),
    ];
    const attempt = AbortSignal.any([ctx.cancellationSignal, deadline.signal]);
    try {
      await publishDeadLetter(input, { attempt, read: AbortSignal.any([attempt, readDeadline.signal]) });
    } finally {
      for (const timer of timers) clearTimeout(timer);
    }
  }

  async function publishDeadLetter(input: DeadLetterInput, signals: AttemptSignals): Promise<void> {
    const signal = signals.attempt;
    const ctx = Context.current();
    // Executions started before `dispatchKey` was passed carry the dispatch itself.
    const dispatchKey =
      input.dispatchKey ??
      input.dispatch?.dispatch_key ??
      (await deps.startedWith(input.workflowId, input.workflowRunId)).input.dispatch.dispatch_key;
    const { value, key, headers, note } = await original(input, dispatchKey, signals.read);
    // Every attempt the call made, as the execution's history holds them: numbers without a record as NO_OUTCOME.
    // A history that cannot be read is retried with the attempt; from the third attempt on, it no longer holds the
    // dead letter back.
    const history = await deps
      .callHistory(input.workflowId, input.workflowRunId, input.retryCount)
      .catch((err: unknown) => {
        if (ctx.info.attempt < 3) throw err;
        deps.logger.warn(
          { workflow_id: input.workflowId, err: err instanceof Error ? err.message : String(err) },
          'attempt history not readable; the dead letter lists the attempts without it',
        );
        return undefined;
      });
    const attempts = throughAttempt(history ?? emptyHistory(), input.retryCount);
    // Redacted again, as `error` is (each entry was written by whichever worker made the attempt), then cut.
    attempts.attempts = attempts.attempts.map((a) =>
      a.error === null ? a : { ...a, error: attemptError(redact(a.error)) },
    );
    const record = buildDlqRecord({
      // The dispatch and the record that asked for this run (contract §6): a retried `deadLetter` activity, or
      // another run of the same record, writes the same id again; a replay is a new record, so a new dead letter.
      id: dlqRecordId(failureSeed(input)),
      timestamp: Date.now(),
      type: 'dispatch_failure',
      tenant: input.tenant,
      dispatchKey,
      runId: input.workflowRunId,
      error: redact(bodyExcerpt(input.error, 1000)) + note,
      httpStatus: input.httpStatus,
      retryCount: input.retryCount,
      // 0 is "no count limit" (only the retry budget); executions before the budget always had a positive cap.
      maxRetries: input.maxRetries > 0 ? input.maxRetries : null,
      targetUrl: target,
      source: input.source,
      ...(key !== undefined ? { key } : {}),
      ...(headers !== undefined ? { headers } : {}),
      value,
      attempts,
    });
    await deps.dlq.publish(record, dispatchRecordKey(input.tenant, dispatchKey), {
      signal,
      // Heartbeats carry a cancellation of the execution to a running attempt.
      onRetry: () => ctx.heartbeat(),
    });
  }

  return { deadLetter };
}
