/**
 * The worker's activities, built by a factory from injected clients (nothing is created at import time).
 *
 * `postRun` is the relay's only way to make a run: one POST /v1/runs per attempt, no retries inside undici
 * (retries live in exactly one layer, the activity RetryPolicy); the answer is classified by one pure
 * function and turned into success, a retryable failure (with Retry-After as nextRetryDelay) or a
 * non-retryable one. `deadLetter` publishes the SPEC §6 record through the process's shared producer.
 */
import { StringDecoder } from 'node:string_decoder';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { type Dispatcher, errors as undiciErrors, request } from 'undici';
import {
  type Dispatch,
  type DlqSource,
  type LegacyDispatch,
  type RecordHeaders,
  buildDlqRecord,
  dispatchRecordKey,
  runsApiBody,
  runsApiBodyAround,
  validateDispatch,
  withoutUserinfo,
} from '../contract';
import { dlqRecordId } from '../contract/dlqId';
import type { DlqPublisher } from '../kafka/dlqPublisher';
import type { SourceRecord } from '../kafka/sourceRecord';
import type { Logger } from '../logger';
import type { RelayMetrics } from '../metrics';
import {
  type DeadLetterInput,
  type DispatchInput,
  type DispatchResult,
  type PostRunFailureDetails,
  type PostRunHeadInput,
  type PostRunInput,
  RUNS_API_REJECTED,
  RUNS_API_UNAVAILABLE,
} from '../workflows/types';
import { bodyExcerpt, classifyRunsApiAnswer } from './classify';

export interface ActivityDeps {
  dispatcher: Dispatcher;
  runsApi: { url: string; token?: string };
  userAgent: string;
  dlq: DlqPublisher;
  metrics: RelayMetrics;
  logger: Logger;
  /** The argument an execution was started with (read from its history), for a dead letter's payload. */
  startInput(workflowId: string, runId: string): Promise<DispatchInput>;
  /** The dispatch's source record read back from Kafka; undefined when it is no longer there. */
  sourceRecord(at: DlqSource): Promise<SourceRecord | undefined>;
}

/** Share of a `deadLetter` attempt's start-to-close timeout it spends publishing before it gives up. */
const DEAD_LETTER_TIME_SHARE = 0.9;

/** Bodies can be large; only an excerpt is kept for failures. */
const MAX_BODY_BYTES = 64 * 1024;

function errorCode(err: unknown): string | undefined {
  if (err instanceof undiciErrors.UndiciError) return err.code;
  if (err && typeof err === 'object') {
    const { code, name } = err as { code?: unknown; name?: unknown };
    if (typeof code === 'string') return code;
    if (name === 'AbortError' || name === 'TimeoutError') return name;
  }
  return undefined;
}

/**
 * The token as sent and in the forms an echoing API may write it, longest first: a form inside another must
 * not be replaced first and break the longer one apart.
 */
function tokenForms(token: string): string[] {
  return [
    ...new Set([
      token,
      JSON.stringify(token).slice(1, -1),
      JSON.stringify(token).slice(1, -1).replace(/\//g, '\\/'),
      encodeURIComponent(token),
    ]),
  ].sort((a, b) => b.length - a.length);
}

/**
 * The one place the API token is taken out of text that reaches failure messages, logs and dead letters: the
 * token as sent and in the forms an echoing API may write it (JSON-escaped, `\/`-escaped, URL-encoded).
 * Applied to the API's answer as soon as it is read, before anything excerpts (and could cut through) it.
 */
export function secretRedactor(token: string | undefined): (text: string) => string {
  if (!token) return (text) => text;
  const forms = tokenForms(token);
  return (text) => forms.reduce((out, form) => out.split(form).join('<redacted>'), text);
}

/**
 * The first `max` characters of a body, redacted. Whole forms of the token are redacted before the cut. A form
 * that the cut, or the end of what was read (`more`: the body goes on past `text`), goes through is not whole,
 * so no redaction can see it: its start, at the very end of the head, is dropped instead. Otherwise the first
 * characters of a token would survive, and an excerpt that collapses the whitespace before them would show
 * them.
 */
export function redactedHead(text: string, max: number, token: string | undefined, more: boolean): string {
  const redacted = secretRedactor(token)(text);
  if (redacted.length <= max && !more) return redacted;
  const head = redacted.slice(0, max);
  if (!token) return head;
  let keep = head.length;
  for (const form of tokenForms(token)) {
    // The longest proper prefix of this form that the head ends with (a whole form was redacted above).
    for (let k = Math.min(form.length - 1, head.length); k > 0; k--) {
      if (head.endsWith(form.slice(0, k))) {
        keep = Math.min(keep, head.length - k);
        break;
      }
    }
  }
  return head.slice(0, keep);
}

/** A response body as failures may quote it: its first MAX_BODY_BYTES characters, the token redacted. */
export async function readRedacted(
  body: AsyncIterable<Buffer>,
  token: string | undefined,
  maxBytes = MAX_BODY_BYTES,
): Promise<string> {
  const { text, more } = await readLimited(body, maxBytes);
  return redactedHead(text, maxBytes, token, more);
}

/** Used only if an attempt arrives without its retry policy: SPEC §5's default maximum interval. */
const FALLBACK_MAX_INTERVAL_MS = 5 * 60_000;

/**
 * The delay a `Retry-After` asks for, capped at the retry policy's maximum interval (SPEC §5): Temporal does not
 * cap `nextRetryDelay` itself, so a proxy's `Retry-After: 86400` would park the dispatch for a day per attempt,
 * and a value past what a Duration holds would fail the attempt's completion. Undefined leaves the delay to the
 * policy: a zero delay (Retry-After: 0 or a past date) means "retry now", but Temporal reads a zero
 * nextRetryDelay as "no retry" and would fail the activity at once.
 */
export function retryDelayMs(
  retryAfterMs: number | undefined,
  maxIntervalMs: number | string | undefined,
): number | undefined {
  if (retryAfterMs === undefined || !(retryAfterMs > 0)) return undefined;
  const cap =
    typeof maxIntervalMs === 'number' && maxIntervalMs > 0 ? maxIntervalMs : FALLBACK_MAX_INTERVAL_MS;
  return Math.min(retryAfterMs, cap);
}

/** The promise's outcome, or a rejection as soon as the signal aborts (the work itself is not stopped). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('the attempt is out of time'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('the attempt is out of time'));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

export function createActivities(deps: ActivityDeps) {
  const target = `${deps.runsApi.url}/v1/runs`;
  // What failure messages name: the URL without any user:password@ part.
  const shownTarget = withoutUserinfo(target);
  const redact = secretRedactor(deps.runsApi.token);

  /** The request body: from the input's bytes when the execution sent them, else from the carried dispatch. */
  function bodyOf(input: PostRunInput, inputText: Uint8Array | undefined): Buffer | string {
    const { dispatch } = input;
    if (inputText) {
      const [before, after] = runsApiBodyAround(dispatch);
      return Buffer.concat([Buffer.from(before), inputText, Buffer.from(after)]);
    }
    if ('input_json' in dispatch || 'input' in dispatch) return runsApiBody(dispatch);
    // Not made by any version of the workflow: sending would post `"input":null` in the producer's name.
    throw ApplicationFailure.create({
      type: RUNS_API_REJECTED,
      message: 'postRun was scheduled without the dispatch input',
      nonRetryable: true,
      details: [
        { httpStatus: null, attempt: Context.current().info.attempt } satisfies PostRunFailureDetails,
      ],
    });
  }

  async function postRun(input: PostRunInput, inputText?: Uint8Array): Promise<DispatchResult> {
    const ctx = Context.current();
    const attempt = ctx.info.attempt;
    const { dispatch_key } = input.dispatch;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-tenant-id': input.tenant,
      'idempotency-key': dispatch_key,
      'user-agent': deps.userAgent,
    };
    if (deps.runsApi.token) headers.authorization = `Bearer ${deps.runsApi.token}`;
    if (input.traceparent) headers.traceparent = input.traceparent;

    const started = performance.now();
    // A timer, not AbortSignal.timeout: a timeout signal referenced only by AbortSignal.any can be garbage-collected
    // before it fires (nodejs/node#57736), and the attempt would then wait for the API for ever.
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), input.attemptTimeoutMs);
    const signal = AbortSignal.any([ctx.cancellationSignal, timeout.signal]);
    let answer: Parameters<typeof classifyRunsApiAnswer>[0];
    let code: string;
    try {
      const res = await request(target, {
        dispatcher: deps.dispatcher,
        method: 'POST',
        headers,
        // Exactly the four fields, values as received (SPEC §5).
        body: bodyOf(input, inputText),
        signal,
      });
      const body = await readRedacted(res.body, deps.runsApi.token);
      const resHeaders = Object.fromEntries(
        Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.map(redact) : v && redact(v)]),
      );
      answer = { kind: 'response', status: res.statusCode, headers: resHeaders, body, nowMs: Date.now() };
      code = String(res.statusCode);
    } catch (err) {
      const errCode = signal.aborted && !ctx.cancellationSignal.aborted ? 'TimeoutError' : errorCode(err);
      answer = { kind: 'error', code: errCode };
      code = errCode === 'TimeoutError' ? 'timeout' : 'error';
    } finally {
      clearTimeout(timer);
    }
    deps.metrics.runsApiRequests.inc({ code });
    deps.metrics.runsApiDuration.observe((performance.now() - started) / 1000);

    const verdict = classifyRunsApiAnswer(answer);
    const log = deps.logger.child({ tenant: input.tenant, dispatch_key, attempt, code });
    if (verdict.outcome === 'success') {
      if (Number.isFinite(input.recordTimestampMs)) {
        deps.metrics.dispatchLatency.observe(Math.max(0, Date.now() - input.recordTimestampMs) / 1000);
      }
      log.info({ admission: verdict.admission, run_id: verdict.runId }, 'run admitted');
      return { run_id: verdict.runId, admission: verdict.admission };
    }
    const details: PostRunFailureDetails = { httpStatus: verdict.httpStatus, attempt };
    const message = redact(answer.kind === 'error' ? `${verdict.reason} (${shownTarget})` : verdict.reason);
    if (verdict.outcome === 'fatal') {
      log.warn({ reason: message }, 'runs API refused the dispatch');
      throw ApplicationFailure.create({
        type: RUNS_API_REJECTED,
        message,
        nonRetryable: true,
        details: [details],
      });
    }
    log.warn(
      { reason: message, retry_after_ms: verdict.retryAfterMs },
      'runs API attempt failed; Temporal will retry',
    );
    const delayMs = retryDelayMs(verdict.retryAfterMs, ctx.info.retryPolicy?.maximumInterval);
    throw ApplicationFailure.create({
      type: RUNS_API_UNAVAILABLE,
      message,
      details: [details],
      ...(delayMs !== undefined ? { nextRetryDelay: delayMs } : {}),
    });
  }

  /**
   * The record a dead letter carries: the source record as consumed (value, key, headers; SPEC §6), read back
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
      // Bounded by the attempt's own deadline: a read left behind publishes nothing.
      const found = await untilAborted(deps.sourceRecord(input.source), signal);
      const verdict = found && validateDispatch(found.value, { tenant: input.tenant, maxBytes: Infinity });
      if (found && verdict?.ok && verdict.dispatch.dispatch_key === dispatchKey) {
        return { value: found.value!, key: found.key, headers: found.headers, note: '' };
      }
      why = found ? 'holds another record' : 'is no longer in Kafka';
    } catch (err) {
      why = `could not be read (${err instanceof Error ? err.message : String(err)})`;
    }
    const dispatch: Dispatch | LegacyDispatch =
      input.dispatch ?? (await deps.startInput(input.workflowId, input.workflowRunId)).dispatch;
    const s = input.source;
    return {
      value: runsApiBody(dispatch),
      note: ` [payload rebuilt from the workflow input: ${s.topic} partition ${s.partition} offset ${s.offset} ${why}]`,
    };
  }

  async function deadLetter(input: DeadLetterInput): Promise<void> {
    const ctx = Context.current();
    // Give up inside the attempt's own timeout, so it ends as a retryable failure and nothing keeps publishing
    // once Temporal has moved on to the next attempt; Temporal's cancellation (a heartbeat's answer, worker
    // shutdown, or core's local start-to-close timer) stops it too. A timer, not AbortSignal.timeout: a timeout
    // signal referenced only by AbortSignal.any can be garbage-collected and never fire.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), ctx.info.startToCloseTimeoutMs * DEAD_LETTER_TIME_SHARE);
    try {
      await publishDeadLetter(input, AbortSignal.any([ctx.cancellationSignal, deadline.signal]));
    } finally {
      clearTimeout(timer);
    }
  }

  async function publishDeadLetter(input: DeadLetterInput, signal: AbortSignal): Promise<void> {
    const ctx = Context.current();
    // Executions started before `dispatchKey` was passed carry the dispatch itself.
    const dispatchKey =
      input.dispatchKey ??
      input.dispatch?.dispatch_key ??
      (await deps.startInput(input.workflowId, input.workflowRunId)).dispatch.dispatch_key;
    const { value, key, headers, note } = await original(input, dispatchKey, signal);
    const record = buildDlqRecord({
      // Derived from the execution, so a retried `deadLetter` activity writes the same id again.
      id: dlqRecordId(`${input.workflowId}/${input.workflowRunId}`),
      timestamp: Date.now(),
      type: 'dispatch_failure',
      tenant: input.tenant,
      dispatchKey,
      runId: input.workflowRunId,
      error: redact(bodyExcerpt(input.error, 1000)) + note,
      httpStatus: input.httpStatus,
      retryCount: input.retryCount,
      maxRetries: input.maxRetries,
      targetUrl: target,
      source: input.source,
      ...(key !== undefined ? { key } : {}),
      ...(headers !== undefined ? { headers } : {}),
      value,
    });
    await deps.dlq.publish(record, dispatchRecordKey(input.tenant, dispatchKey), {
      signal,
      // Heartbeats carry a cancellation of the execution to a running attempt.
      onRetry: () => ctx.heartbeat(),
    });
  }

  /**
   * `postRun` for a dispatch whose input's text travels as bytes. A name of its own: `postRun` once took the whole
   * dispatch in one argument, and a worker of that version handed `(head, bytes)` posts `"input": null`. Such a
   * worker does not know this name, so its attempt fails and a current worker takes the retry.
   */
  async function postRunWithInputBytes(
    input: PostRunHeadInput,
    inputText: Uint8Array,
  ): Promise<DispatchResult> {
    return postRun(input, inputText);
  }

  /**
   * `postRun` for a dispatch whose input is over LARGE_INPUT_BYTES: the input is read from the execution's start
   * event here, not carried in the schedule. The SDK core keeps a scheduled activity's arguments for as long as
   * the execution is cached, so a backlog of large calls would otherwise hold each input in memory until its
   * call ends, however few run at once; here only the calls running on the large-input queue's few slots hold one.
   */
  async function postRunReadingInput(input: PostRunHeadInput): Promise<DispatchResult> {
    const { workflowExecution: wf } = Context.current().info;
    if (!wf) throw new Error('postRunReadingInput runs only in a workflow execution');
    const { dispatch } = await deps.startInput(wf.workflowId, wf.runId);
    if (!('input_json' in dispatch)) return postRun({ ...input, dispatch });
    return postRun(input, Buffer.from(dispatch.input_json, 'utf8'));
  }

  return { postRun, postRunWithInputBytes, postRunReadingInput, deadLetter };
}

export type RelayActivities = ReturnType<typeof createActivities>;

async function readLimited(
  body: AsyncIterable<Buffer>,
  maxBytes: number,
): Promise<{ text: string; more: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let more = false;
  // Read to the end even past the limit: an unconsumed body would keep undici's connection busy.
  for await (const chunk of body) {
    if (size < maxBytes) {
      chunks.push(chunk);
      size += chunk.length;
    } else {
      more = true;
    }
  }
  const bytes = Buffer.concat(chunks);
  // A body cut mid-character: the decoder holds back the partial bytes rather than writing U+FFFD, which would
  // hide a token's first characters from redactedHead.
  return { text: more ? new StringDecoder('utf8').write(bytes) : bytes.toString('utf8'), more };
}
