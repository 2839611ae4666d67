/* eslint-disable max-lines -- one case per HTTP answer class of the postRun activity */
/**
 * The `postRun` activity's I/O against a real node:http server, run in the SDK's MockActivityEnvironment: the
 * bytes and headers on the wire, how each answer is turned into success or failure, the metrics it records, and
 * the cap on a Retry-After. The integration suites show the same on the real stack in minutes; these fail in
 * seconds when the activity changes.
 */
import http from 'node:http';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { NO_OUTCOME } from '../../src/contract/attempts';
import { DefaultLogger } from '@temporalio/worker';
import { Agent } from 'undici';
import { createActivities } from '../../src/activities';
import { createBreakerGate } from '../../src/activities/breakerGate';
import type { DlqPublisher } from '../../src/kafka/dlqPublisher';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';
import type { PostRunHeadInput, PostRunInput } from '../../src/contract/workflow';

interface Seen {
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}
type Answer = { status: number; headers?: Record<string, string>; body?: string };

let server: http.Server;
let url: string;
const seen: Seen[] = [];
let answers: Answer[] = [];
const dispatcher = new Agent();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ headers: req.headers, body: Buffer.concat(chunks) });
      const a = answers.shift() ?? { status: 201, body: '{"run_id":"r-1","admission":"created"}' };
      res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
      res.end(a.body ?? '{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await dispatcher.close();
  await new Promise<void>((r) => server.close(() => r()));
});
beforeEach(() => {
  seen.length = 0;
  answers = [];
});

function activities(token?: string, logger = createLogger('unit', 'silent')) {
  const metrics = createMetrics();
  const acts = createActivities({
    gate: createBreakerGate({ failures: 5, probeIntervalMs: 1_000, paced: false }, metrics, logger),
    dispatcher,
    runsApi: { url, ...(token ? { token } : {}) },
    userAgent: 'poimen-relay/unit',
    dlq: {} as DlqPublisher,
    metrics,
    logger,
    startedWith: () => Promise.reject(new Error('not used')),
    sourceRecord: () => Promise.reject(new Error('not used')),
    callHistory: () => Promise.reject(new Error('not used')),
    tenantPause: () => undefined,
  });
  return { acts, metrics };
}

const env = (maximumInterval = 60_000) =>
  new MockActivityEnvironment(
    {
      attempt: 3,
      retryPolicy: { maximumInterval, initialInterval: 1000, backoffCoefficient: 2 },
      // The mock's own default is a 1 s budget from the epoch, long over: no retry would follow any failure.
      scheduledTimestampMs: Date.now(),
      scheduleToCloseTimeoutMs: 0,
    } as never,
    // Failures are what these tests provoke; the SDK's warning per failed attempt is noise here.
    { logger: new DefaultLogger('ERROR') },
  );

const HEAD: PostRunHeadInput = {
  tenant: 'acme',
  dispatch: { workflow_ref: 'onboarding@v3', goal_id: null, dispatch_key: 'd-1' },
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  attemptTimeoutMs: 5_000,
  recordTimestampMs: Date.now() - 2_000,
};
// Text as the producer wrote it: spacing and a 2^53+1 integer must reach the API byte for byte.
const INPUT_TEXT = '{ "user": 9007199254740993,\n "name": "Zoë" }';

async function metricValues(metrics: ReturnType<typeof createMetrics>) {
  const requests = await metrics.runsApiRequests.get();
  const duration = await metrics.runsApiDuration.get();
  const latency = await metrics.dispatchLatency.get();
  const count = (h: typeof duration) => h.values.find((v) => v.metricName?.endsWith('_count'))?.value ?? 0;
  const sum = (h: typeof duration) => h.values.find((v) => v.metricName?.endsWith('_sum'))?.value ?? 0;
  return {
    byCode: Object.fromEntries(requests.values.map((v) => [v.labels.code, v.value])),
    durationCount: count(duration),
    latencyCount: count(latency),
    latencySum: sum(latency),
  };
}

describe('postRun activity I/O', () => {
  test('postRunWithInputBytes posts the four fields with the input bytes verbatim and the SPEC headers', async () => {
    const { acts, metrics } = activities('s3cret');
    const result = await env().run(acts.postRunWithInputBytes, HEAD, new TextEncoder().encode(INPUT_TEXT));
    expect(result).toEqual({ run_id: 'r-1', admission: 'created' });
    expect(seen).toHaveLength(1);
    const [{ headers, body }] = seen as [Seen];
    expect(body.toString('utf8')).toBe(
      `{"workflow_ref":"onboarding@v3","input":${INPUT_TEXT},"goal_id":null,"dispatch_key":"d-1"}`,
    );
    expect(headers['content-type']).toBe('application/json');
    expect(headers['x-tenant-id']).toBe('acme');
    expect(headers['idempotency-key']).toBe('d-1');
    expect(headers['user-agent']).toBe('poimen-relay/unit');
    expect(headers.authorization).toBe('Bearer s3cret');
    expect(headers.traceparent).toBe(HEAD.traceparent);
    const m = await metricValues(metrics);
    expect(m.byCode).toEqual({ '201': 1 });
    expect(m.durationCount).toBe(1);
    expect(m.latencyCount).toBe(1);
    // Record → API latency is measured from the Kafka record's timestamp, 2 s ago.
    expect(m.latencySum).toBeGreaterThanOrEqual(2);
  });

  test('a 409 is success with the existing run; no token means no authorization header', async () => {
    const { acts, metrics } = activities();
    answers = [{ status: 409, body: '{"run_id":"r-old","admission":"existing"}' }];
    const input: PostRunInput = { ...HEAD, dispatch: { ...HEAD.dispatch, input: { a: 1 } } };
    await expect(env().run(acts.postRun, input)).resolves.toEqual({ run_id: 'r-old', admission: 'existing' });
    expect(seen[0]!.headers.authorization).toBeUndefined();
    expect(JSON.parse(seen[0]!.body.toString())).toEqual({
      workflow_ref: 'onboarding@v3',
      input: { a: 1 },
      goal_id: null,
      dispatch_key: 'd-1',
    });
    expect((await metricValues(metrics)).byCode).toEqual({ '409': 1 });
  });

  test('a 422 is a non-retryable RunsApiRejected carrying the status and attempt; no latency observed', async () => {
    const { acts, metrics } = activities();
    answers = [{ status: 422, body: '{"error":"unknown workflow_ref"}' }];
    const err = await env()
      .run(acts.postRunWithInputBytes, HEAD, new TextEncoder().encode('{}'))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    const failure = err as ApplicationFailure;
    expect(failure.type).toBe('RunsApiRejected');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('unknown workflow_ref');
    expect(failure.details?.[0]).toEqual({
      httpStatus: 422,
      attempt: 3,
      attempts: [
        expect.anything(),
        expect.anything(),
        expect.objectContaining({ attempt: 3, http_status: 422 }),
      ],
      attempts_omitted: 0,
    });
    const m = await metricValues(metrics);
    expect(m.byCode).toEqual({ '422': 1 });
    expect(m.durationCount).toBe(1);
    expect(m.latencyCount).toBe(0);
  });

  test.each([
    ['Retry-After within the maximum interval is kept', '2', 60_000, 2_000],
    ['Retry-After past the maximum interval is capped at it', '86400', 30_000, 30_000],
    ['a far HTTP date is capped at the maximum interval', 'Fri, 31 Dec 9999 23:59:59 GMT', 45_000, 45_000],
  ])('503: %s', async (_what, retryAfter, maxIntervalMs, expectedDelayMs) => {
    const { acts } = activities();
    answers = [{ status: 503, headers: { 'retry-after': retryAfter } }];
    const err = (await env(maxIntervalMs)
      .run(acts.postRunWithInputBytes, HEAD, new TextEncoder().encode('{}'))
      .catch((e: unknown) => e)) as ApplicationFailure;
    expect(err.type).toBe('RunsApiUnavailable');
    expect(err.nonRetryable).toBe(false);
    // A retry will follow: the failure stays small (the heartbeat carries the history).
    expect(err.details?.[0]).toEqual({ httpStatus: 503, attempt: 3 });
    expect(Number(err.nextRetryDelay)).toBe(expectedDelayMs);
  });

  test('a 503 without Retry-After leaves the delay to the retry policy', async () => {
    const { acts } = activities();
    answers = [{ status: 503 }];
    const err = (await env()
      .run(acts.postRunWithInputBytes, HEAD, new TextEncoder().encode('{}'))
      .catch((e: unknown) => e)) as ApplicationFailure;
    expect(err.type).toBe('RunsApiUnavailable');
    expect(err.nextRetryDelay).toBeUndefined();
  });

  test('a refused connection is retryable and counted under code "error", the target named', async () => {
    const metrics = createMetrics();
    const acts = createActivities({
      gate: createBreakerGate(
        { failures: 5, probeIntervalMs: 1_000, paced: false },
        metrics,
        createLogger('unit', 'silent'),
      ),
      dispatcher,
      runsApi: { url: 'http://127.0.0.1:1' },
      userAgent: 'poimen-relay/unit',
      dlq: {} as DlqPublisher,
      metrics,
      logger: createLogger('unit', 'silent'),
      startedWith: () => Promise.reject(new Error('not used')),
      sourceRecord: () => Promise.reject(new Error('not used')),
      callHistory: () => Promise.reject(new Error('not used')),
      tenantPause: () => undefined,
    });
    const err = (await env()
      .run(acts.postRunWithInputBytes, HEAD, new TextEncoder().encode('{}'))
      .catch((e: unknown) => e)) as ApplicationFailure;
    expect(err.type).toBe('RunsApiUnavailable');
    expect(err.nonRetryable).toBe(false);
    expect(err.message).toContain('http://127.0.0.1:1/v1/runs');
    expect((await metricValues(metrics)).byCode).toEqual({ error: 1 });
  });

  test('its log lines name the tenant, dispatch, workflow, Temporal run and trace', async () => {
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    const { acts } = activities(undefined, createLogger('unit', 'info', { format: 'json', destination }));
    const e = new MockActivityEnvironment(
      { attempt: 1, workflowExecution: { workflowId: 'dispatch:acme:d-1', runId: 'run-0001' } } as never,
      { logger: new DefaultLogger('ERROR') },
    );
    await e.run(acts.postRunWithInputBytes, HEAD, new TextEncoder().encode('{}'));
    expect(lines).toEqual([
      expect.objectContaining({
        msg: 'run admitted',
        tenant: 'acme',
        dispatch_key: 'd-1',
        workflow_id: 'dispatch:acme:d-1',
        temporal_run_id: 'run-0001',
        traceparent: HEAD.traceparent,
        // The runs API's own id for the run it made.
        run_id: 'r-1',
      }),
    ]);
  });
});

describe('the attempt history (contract §6 attempts) travels from attempt to attempt in the heartbeat', () => {
  const previous = {
    waitingOnBreaker: false,
    openSince: null,
    httpStatus: null,
    attempt: 2,
    attempts: [
      {
        attempt: 1,
        at: '2026-12-01T10:00:00.000Z',
        http_status: 503,
        error: 'runs API answered 503',
        duration_ms: 12,
      },
    ],
    attempts_omitted: 0,
    // Attempt 2 heartbeated as it began, then its worker was killed.
    current: { attempt: 2, at: '2026-12-01T10:00:02.000Z' },
  };

  test('a retry names itself first; its failure carries every attempt, the lost one as "no outcome recorded"', async () => {
    const { acts } = activities();
    answers = [{ status: 422, body: '{"error":"unknown workflow_ref"}' }];
    const e = new MockActivityEnvironment({ attempt: 3, heartbeatDetails: previous } as never, {
      logger: new DefaultLogger('ERROR'),
    });
    const beats: unknown[] = [];
    e.on('heartbeat', (d: unknown) => beats.push(d));
    const err = (await e
      .run(acts.postRunWithInputBytes, HEAD, new TextEncoder().encode('{}'))
      .catch((x: unknown) => x)) as ApplicationFailure;
    const expected = [
      previous.attempts[0],
      { attempt: 2, at: '2026-12-01T10:00:02.000Z', http_status: null, error: NO_OUTCOME, duration_ms: null },
      {
        attempt: 3,
        at: expect.any(String) as string,
        http_status: 422,
        error: expect.stringContaining('unknown workflow_ref') as string,
        duration_ms: expect.any(Number) as number,
      },
    ];
    expect(err.details?.[0]).toEqual({
      httpStatus: 422,
      attempt: 3,
      attempts: expected,
      attempts_omitted: 0,
    });
    // First the running attempt as it calls (what a worker killed now leaves), last the settled history; neither
    // names `attempt` at the top level, which only a breaker wait does (the workflow counts a timeout's attempts by it).
    expect(beats).toEqual([
      { attempts: expected.slice(0, 2), attempts_omitted: 0, current: { attempt: 3, at: expected[2]!.at } },
      { attempts: expected, attempts_omitted: 0 },
    ]);
    expect((beats[0] as { current: { at: string } }).current.at).toBe(
      (err.details?.[0] as { attempts: { at: string }[] }).attempts[2]!.at,
    );
  });

  test('an API that echoes the token: the attempt error is redacted, and at most 512 bytes', async () => {
    const token = 'sk-live-0123456789abcdef';
    const { acts } = activities(token);
    answers = [{ status: 503, body: `bad token ${token} ${'x'.repeat(2000)}` }];
    const beats: { attempts: { error: string }[] }[] = [];
    const e = env();
    e.on('heartbeat', (d: { attempts: { error: string }[] }) => beats.push(d));
    await e.run(acts.postRunWithInputBytes, HEAD, new TextEncoder().encode('{}')).catch(() => undefined);
    const entry = beats.at(-1)!.attempts[2]!;
    expect(entry.error).toMatch(/503/);
    expect(entry.error).not.toContain(token);
    expect(entry.error).not.toContain('sk-live');
    expect(Buffer.byteLength(entry.error)).toBeLessThanOrEqual(512);
  });

  test('a first attempt that succeeds heartbeats nothing (no write to Temporal on the happy path)', async () => {
    const { acts } = activities();
    answers = [{ status: 201, body: '{"run_id":"r-1","admission":"created"}' }];
    const e = new MockActivityEnvironment({ attempt: 1 } as never, { logger: new DefaultLogger('ERROR') });
    const beats: unknown[] = [];
    e.on('heartbeat', (d: unknown) => beats.push(d));
    await e.run(acts.postRunWithInputBytes, HEAD, new TextEncoder().encode('{}'));
    expect(beats).toEqual([]);
  });

  test('a retryable failure carries the history only when it may be the last: the cap, or the budget about to end', async () => {
    const { acts } = activities();
    const run = async (info: Record<string, unknown>) => {
      answers = [{ status: 503 }];
      const e = new MockActivityEnvironment({ attempt: 3, ...info } as never, {
        logger: new DefaultLogger('ERROR'),
      });
      const err = (await e
        .run(acts.postRunWithInputBytes, HEAD, new TextEncoder().encode('{}'))
        .catch((x: unknown) => x)) as ApplicationFailure;
      return err.details?.[0] as { attempts?: unknown[] };
    };
    const policy = { initialInterval: 1000, backoffCoefficient: 2, maximumInterval: 60_000 };
    // Not the last: the next retry (in 4 s) starts well inside a 24 h budget.
    const inside = {
      retryPolicy: policy,
      scheduledTimestampMs: Date.now(),
      scheduleToCloseTimeoutMs: 86_400_000,
    };
    expect(await run(inside)).toEqual({ httpStatus: 503, attempt: 3 });
    // The cap reached.
    expect((await run({ ...inside, retryPolicy: { ...policy, maximumAttempts: 3 } })).attempts).toHaveLength(
      3,
    );
    // The next retry would start past the budget's end.
    const ending = {
      retryPolicy: policy,
      scheduledTimestampMs: Date.now() - 9_000,
      scheduleToCloseTimeoutMs: 10_000,
    };
    expect((await run(ending)).attempts).toHaveLength(3);
  });

  test('an unexpected error on the last attempt becomes a retryable failure that carries the history', async () => {
    const { acts } = activities();
    const e = new MockActivityEnvironment(
      { attempt: 2, retryPolicy: { maximumAttempts: 2, initialInterval: 1000 } } as never,
      { logger: new DefaultLogger('ERROR') },
    );
    // A large-input call whose history cannot be read: an error that is not an application failure.
    const err = (await e.run(acts.postRunReadingInput, HEAD).catch((x: unknown) => x)) as ApplicationFailure;
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err.nonRetryable).toBeFalsy();
    expect((err.details?.[0] as { attempts: unknown[] }).attempts).toEqual([
      expect.objectContaining({ attempt: 1, error: NO_OUTCOME }),
      expect.objectContaining({ attempt: 2, http_status: null }),
    ]);
  });
});

describe("a Retry-After holds the worker's breaker no longer than the attempt's maximum retry interval", () => {
  test('the next call after the maximum interval is let through, however long the Retry-After', async () => {
    const metrics = createMetrics();
    const logger = createLogger('unit', 'silent');
    const acts = createActivities({
      // Opens at the first outage answer; a probe is due a second later unless a Retry-After holds it back.
      gate: createBreakerGate({ failures: 1, probeIntervalMs: 1_000, paced: false }, metrics, logger),
      dispatcher,
      runsApi: { url },
      userAgent: 'poimen-relay/unit',
      dlq: {} as DlqPublisher,
      metrics,
      logger,
      startedWith: () => Promise.reject(new Error('not used')),
      sourceRecord: () => Promise.reject(new Error('not used')),
      callHistory: () => Promise.reject(new Error('not used')),
      tenantPause: () => undefined,
    });
    const call = () =>
      env(2_000)
        .run(acts.postRunWithInputBytes, HEAD, new TextEncoder().encode('{}'))
        .catch((e: unknown) => e);
    answers = [{ status: 503, headers: { 'retry-after': '86400' } }];
    expect(await call()).toMatchObject({ type: 'RunsApiUnavailable' });
    // Open: an attempt that may not wait fails without calling.
    expect(await call()).toMatchObject({ type: 'RunsApiUnavailable' });
    expect(seen).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 2_100));
    expect(await call()).toEqual({ run_id: 'r-1', admission: 'created' });
    expect(seen).toHaveLength(2);
  });
});
