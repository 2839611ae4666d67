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
  type LegacyDispatch,
  buildDlqRecord,
  dispatchRecordKey,
  runsApiBody,
  runsApiBodyAround,
  withoutUserinfo,
} from '../contract';
import { dlqRecordId } from '../dlqId';
import type { DlqPublisher } from '../kafka/dlqPublisher';
import type { Logger } from '../logger';
import type { RelayMetrics } from '../metrics';
import {
  type DeadLetterInput,
  type DispatchInput,
  type DispatchResult,
  type PostRunFailureDetails,
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
    const signal = AbortSignal.any([ctx.cancellationSignal, AbortSignal.timeout(input.attemptTimeoutMs)]);
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
    throw ApplicationFailure.create({
      type: RUNS_API_UNAVAILABLE,
      message,
      details: [details],
      // A zero delay (Retry-After: 0 or a past date) means "retry now", but Temporal reads a zero
      // nextRetryDelay as "no retry" and fails the activity at once: leave the delay to the policy then.
      ...(verdict.retryAfterMs !== undefined && verdict.retryAfterMs > 0
        ? { nextRetryDelay: verdict.retryAfterMs }
        : {}),
    });
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
    const dispatch: Dispatch | LegacyDispatch =
      input.dispatch ?? (await deps.startInput(input.workflowId, input.workflowRunId)).dispatch;
    const record = buildDlqRecord({
      // Derived from the execution, so a retried `deadLetter` activity writes the same id again.
      id: dlqRecordId(`${input.workflowId}/${input.workflowRunId}`),
      timestamp: Date.now(),
      type: 'dispatch_failure',
      tenant: input.tenant,
      dispatchKey: dispatch.dispatch_key,
      runId: input.workflowRunId,
      error: redact(bodyExcerpt(input.error, 1000)),
      httpStatus: input.httpStatus,
      retryCount: input.retryCount,
      maxRetries: input.maxRetries,
      targetUrl: target,
      source: input.source,
      // The dispatch as the API would have received it: the four fields, replayable as-is.
      value: runsApiBody(dispatch),
    });
    await deps.dlq.publish(record, dispatchRecordKey(input.tenant, dispatch.dispatch_key), {
      signal,
      // Heartbeats carry a cancellation of the execution to a running attempt.
      onRetry: () => ctx.heartbeat(),
    });
  }

  return { postRun, deadLetter };
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
