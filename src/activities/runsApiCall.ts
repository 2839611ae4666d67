/**
 * One call of POST /v1/runs for one attempt: the request body, the circuit breaker's gate, the call itself (no
 * retries inside undici: retries live in exactly one layer, the activity RetryPolicy), and the answer, classified
 * by one pure function (./classify) and turned into success, a retryable failure (with Retry-After as
 * nextRetryDelay) or a non-retryable one. ./postRun's activities run it inside ./recordedAttempt.
 */
import { StringDecoder } from 'node:string_decoder';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { errors as undiciErrors, request } from 'undici';
import { runsApiBody, runsApiBodyAround, withoutUserinfo } from '../contract';
import { redactedHead, secretRedactor } from '../redact';
import {
  type DispatchResult,
  type PostRunFailureDetails,
  type PostRunInput,
  RUNS_API_REJECTED,
  RUNS_API_UNAVAILABLE,
} from '../contract/workflow';
import type { AttemptContext } from './breakerGate';
import { classifyRunsApiAnswer } from './classify';
import { activityRecordFields } from './logFields';
import { SpanKind, inSpan } from '../tracing/tracing';
import type { ActivityDeps } from './deps';

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

/** A response body as failures may quote it: its first MAX_BODY_BYTES characters, the token redacted. */
export async function readRedacted(
  body: AsyncIterable<Buffer>,
  token: string | undefined,
  maxBytes = MAX_BODY_BYTES,
): Promise<string> {
  const { text, more } = await readLimited(body, maxBytes);
  return redactedHead(text, maxBytes, token, more);
}

/** Used only if an attempt arrives without its retry policy: contract §5's default maximum interval. */
const FALLBACK_MAX_INTERVAL_MS = 5 * 60_000;

/**
 * The delay a `Retry-After` asks for, capped at the retry policy's maximum interval (contract §5): Temporal does not
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

/** The call of one attempt, for `postRun` and its successors; `onCall` is told just before the request goes. */
export function createRunsApiCall(deps: ActivityDeps) {
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

  async function callOnce(
    input: PostRunInput,
    inputText: Uint8Array | undefined,
    ctx: AttemptContext,
    onCall: () => void,
  ): Promise<DispatchResult> {
    const attempt = ctx.info.attempt;
    const { dispatch_key } = input.dispatch;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-tenant-id': input.tenant,
      'idempotency-key': dispatch_key,
      'user-agent': deps.userAgent,
    };
    if (deps.runsApi.token) headers.authorization = `Bearer ${deps.runsApi.token}`;

    const requestBody = bodyOf(input, inputText);
    const pass = await deps.gate.enter(ctx, input.tenant, input.attemptTimeoutMs);
    try {
      onCall();
    } catch (err) {
      // No call goes out: a probe ticket held here would keep its breaker half-open for good.
      deps.gate.release(input.tenant, pass);
      throw err;
    }
    const started = performance.now();
    // A timer, not AbortSignal.timeout: a timeout signal referenced only by AbortSignal.any can be garbage-collected
    // before it fires (nodejs/node#57736), and the attempt would then wait for the API for ever.
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), input.attemptTimeoutMs);
    const signal = AbortSignal.any([ctx.cancellationSignal, timeout.signal]);
    let answer: Parameters<typeof classifyRunsApiAnswer>[0];
    let code: string;
    try {
      // The call is a span of its own, a child of the activity's when tracing is on: its context is the
      // traceparent the API receives. With tracing off, the record's traceparent is passed on as it came.
      const { res, body } = await inSpan(
        'POST /v1/runs',
        {
          kind: SpanKind.CLIENT,
          attributes: { 'http.request.method': 'POST', 'poimen.tenant': input.tenant },
        },
        async (traceparent, span) => {
          const tp = traceparent ?? input.traceparent;
          const r = await request(target, {
            dispatcher: deps.dispatcher,
            method: 'POST',
            headers: tp ? { ...headers, traceparent: tp } : headers,
            // Exactly the four fields, values as received (contract §5).
            body: requestBody,
            signal,
          });
          span.setAttribute('http.response.status_code', r.statusCode);
          return { res: r, body: await readRedacted(r.body, deps.runsApi.token) };
        },
      );
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
    const maxInterval = ctx.info.retryPolicy?.maximumInterval;
    deps.gate.record(input.tenant, pass, {
      verdict,
      answer,
      cancelled: ctx.cancellationSignal.aborted,
      startedMs: started,
      ...(typeof maxInterval === 'number' ? { maxHoldMs: maxInterval } : {}),
    });
    const log = deps.logger.child({
      ...activityRecordFields(ctx.info, input.tenant, dispatch_key, input.traceparent),
      attempt,
      code,
    });
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

  return callOnce;
}

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
