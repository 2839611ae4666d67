/* eslint-disable max-lines -- the end-to-end scenarios share one stack set-up and its relay processes */
/**
 * The T10.7 verification suite: real Kafka, real Temporal, the relay's real processes, and the runs API double
 * recording every HTTP call. Each test has its own tenant, consumer group and task queue.
 */
import fs from 'node:fs';
import { WorkflowFailedError } from '@temporalio/client';
import { Kafka, logLevel } from 'kafkajs';
import { topics, workflowId } from '../src/contract';
import { ensureTopics, tenantTopicSpecs } from '../src/kafka/topics';
import { VERSION } from '../src/version';
import { startService, stopService } from './support/faults';
import { type Harness, createHarness } from './support/relayHarness';
import { metricSum, metricValue } from './support/relay';
import { testServices } from './support/testEnv';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

let h: Harness;
afterEach(async () => {
  await h?.cleanup();
});

/** Waits until the ingester has started the dispatch's workflow, then for its result. */
async function result(key: string, timeoutMs = 60_000) {
  const handle = h.client.workflow.getHandle(h.wfId(key));
  await waitFor(() => handle.describe().then(() => true), {
    timeoutMs,
    what: `workflow ${h.wfId(key)} to exist`,
  });
  return handle.result();
}

async function readyz(p: { metricsPort: number }): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${p.metricsPort}/readyz`).catch(() => undefined);
  return res ? { status: res.status, text: await res.text() } : { status: 0, text: 'unreachable' };
}

async function status(key: string) {
  return (await h.client.workflow.getHandle(h.wfId(key)).describe()).status.name;
}

describe('inbox relay (T10.7)', () => {
  test('step 1: one message on .dispatch makes exactly one POST /v1/runs with the four fields verbatim and the SPEC headers', async () => {
    h = await createHarness();
    await h.startWorker();
    await h.startIngester();
    const input = { user: 42, nested: [1, 'x', null, { deep: true }], unicode: 'zoë ✓' };
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    await h.publish(
      JSON.stringify({
        workflow_ref: 'onboarding@v3',
        input,
        goal_id: 'g-17',
        dispatch_key: 'd-0001',
        ignored: 'extra field',
      }),
      { key: `${h.tenant}:d-0001`, headers: { traceparent } },
    );

    expect(await result('d-0001')).toEqual({ run_id: h.api.runs.get('d-0001'), admission: 'created' });
    const calls = h.api.requestsFor('d-0001');
    expect(calls).toHaveLength(1);
    const [call] = calls;
    expect(call!.method).toBe('POST');
    expect(call!.path).toBe('/v1/runs');
    expect(Object.keys(call!.json as object)).toEqual(['workflow_ref', 'input', 'goal_id', 'dispatch_key']);
    expect(call!.json).toEqual({
      workflow_ref: 'onboarding@v3',
      input,
      goal_id: 'g-17',
      dispatch_key: 'd-0001',
    });
    expect(call!.headers['content-type']).toBe('application/json');
    expect(call!.headers['x-tenant-id']).toBe(h.tenant);
    expect(call!.headers['idempotency-key']).toBe('d-0001');
    expect(call!.headers['user-agent']).toBe(`poimen-relay/${VERSION}`);
    expect(call!.headers.traceparent).toBe(traceparent);
    expect(call!.headers.authorization).toBeUndefined();

    const desc = await h.client.workflow.getHandle(h.wfId('d-0001')).describe();
    expect(desc.type).toBe('dispatch');
    expect(desc.taskQueue).toBe(h.taskQueue);
    expect(desc.typedSearchAttributes.getAll().map((p) => [p.key.name, p.value])).toEqual(
      expect.arrayContaining([
        ['TenantId', h.tenant],
        ['DispatchKey', 'd-0001'],
        ['WorkflowRef', 'onboarding@v3'],
        ['GoalId', 'g-17'],
      ]),
    );
    expect(desc.memo).toMatchObject({ source_topic: topics.dispatch(h.tenant), partition: 0, offset: '0' });
  });

  test('step 2a: the same message published again still makes exactly one run', async () => {
    h = await createHarness();
    await h.startWorker();
    const ingester = await h.startIngester();
    await h.publish(h.dispatchValue('d-dup'));
    await result('d-dup');
    await h.publish(h.dispatchValue('d-dup'));
    await waitFor(
      async () =>
        metricValue(await ingester.metrics(), 'poimen_dispatch_records_total', {
          tenant: h.tenant,
          outcome: 'duplicate',
        }) === 1,
      {
        what: 'the redelivery to be counted as a duplicate',
      },
    );
    expect(h.api.requestsFor('d-dup')).toHaveLength(1);
    expect(h.api.runs.size).toBe(1);
    await h.expectCommittedAtLogEnd();
  });

  test('step 2b: resetting the group offset and restarting the ingester still makes exactly one run per dispatch', async () => {
    h = await createHarness();
    await h.startWorker();
    const first = await h.startIngester('ingest-1');
    for (const k of ['r-1', 'r-2', 'r-3']) await h.publish(h.dispatchValue(k));
    for (const k of ['r-1', 'r-2', 'r-3']) await result(k);
    expect(await first.stop()).toBe(0);

    const admin = h.kafka.admin();
    await admin.connect();
    await admin.resetOffsets({ groupId: h.groupId, topic: topics.dispatch(h.tenant), earliest: true });
    await admin.disconnect();

    const second = await h.startIngester('ingest-2');
    await waitFor(
      async () =>
        metricValue(await second.metrics(), 'poimen_dispatch_records_total', {
          tenant: h.tenant,
          outcome: 'duplicate',
        }) === 3,
      {
        what: 'all three redeliveries counted as duplicates',
      },
    );
    expect(h.api.requests).toHaveLength(3);
    expect(h.api.runs.size).toBe(3);
    await h.expectCommittedAtLogEnd();
  });

  test('step 3a: Kafka down: a message produced by a retrying producer during the outage is relayed once the broker is back', async () => {
    h = await createHarness();
    await h.startWorker();
    const ingester = await h.startIngester();
    await h.publish(h.dispatchValue('before-outage'));
    await result('before-outage');

    // A producer whose every layer retries for minutes (the broker can take half a minute to restart on a
    // loaded machine; kafkajs' default client budget gives up after ~20 s).
    const patient = new Kafka({
      clientId: 'it-patient-producer',
      brokers: testServices().kafkaBrokers,
      logLevel: logLevel.NOTHING,
      retry: { retries: 60, initialRetryTime: 300, maxRetryTime: 5_000 },
    }).producer({ allowAutoTopicCreation: false });
    await patient.connect();
    await stopService('kafka');
    // The producer keeps retrying while the broker is down; the send completes after it returns.
    let acked = false;
    const sending = patient
      .send({
        topic: topics.dispatch(h.tenant),
        acks: -1,
        messages: [{ value: h.dispatchValue('during-outage') }],
      })
      .then(() => {
        acked = true;
      })
      .finally(() => patient.disconnect());
    let restartedAtMs: number;
    try {
      // The outage is real for both sides: the ingester's consumer loses the broker, and the record is not
      // accepted (a single broker that is down cannot have written it).
      await waitFor(() => fs.readFileSync(ingester.logFile, 'utf8').includes('ECONNREFUSED'), {
        what: 'the ingester to meet the broker outage',
      });
      expect(acked).toBe(false);
      expect(h.api.requestsFor('during-outage')).toHaveLength(0);
    } finally {
      restartedAtMs = Date.now();
      await startService('kafka');
    }
    await sending;

    expect(await result('during-outage', 120_000)).toMatchObject({ admission: 'created' });
    const [call, ...more] = h.api.requestsFor('during-outage');
    expect(more).toHaveLength(0);
    // Relayed after the broker came back, not before.
    expect(call!.receivedAtMs).toBeGreaterThanOrEqual(restartedAtMs);
    expect(h.api.runs.size).toBe(2);
    await h.expectCommittedAtLogEnd();
  });

  test('step 3b: a run already in flight (API answering 503 at first) completes while Kafka is down', async () => {
    h = await createHarness();
    await h.startWorker();
    await h.startIngester();
    h.api.scriptFor('in-flight', { kind: 'status', status: 503 }, { kind: 'status', status: 503 });
    await h.publish(h.dispatchValue('in-flight'));
    await h.api.waitFor((a) => a.requestsFor('in-flight').length >= 1, 60_000, 'the first (503) attempt');

    await stopService('kafka');
    try {
      await h.api.waitFor(
        (a) => a.runs.has('in-flight'),
        60_000,
        'the run to be created while Kafka is down',
      );
      expect(await result('in-flight')).toMatchObject({ admission: 'created' });
      expect(h.api.requestsFor('in-flight').map((r) => r.answer)).toEqual([503, 503, 201]);
    } finally {
      await startService('kafka');
    }
  });

  test('step 4: malformed messages of every kind are dead-lettered with their reason, and the valid message after them is relayed', async () => {
    h = await createHarness({ env: { DISPATCH_MAX_BYTES: '2048' } });
    await h.startWorker();
    const ingester = await h.startIngester();
    const bad: [string, string | Buffer | null, RegExp, string][] = [
      ['not JSON', '{"workflow_ref": "x", oops', /not valid JSON/, 'malformed_dispatch'],
      ['not UTF-8', Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), /not valid UTF-8/, 'malformed_dispatch'],
      [
        'missing field',
        JSON.stringify({ workflow_ref: 'w@1', input: {}, dispatch_key: undefined }),
        /missing field dispatch_key/,
        'malformed_dispatch',
      ],
      [
        'wrong type',
        JSON.stringify({ workflow_ref: 7, input: {}, goal_id: null, dispatch_key: 'k-wrong-type' }),
        /workflow_ref must be a string/,
        'malformed_dispatch',
      ],
      [
        'too large',
        h.dispatchValue('k-too-large', { padding: 'x'.repeat(3000) }),
        /over DISPATCH_MAX_BYTES 2048/,
        'malformed_dispatch',
      ],
      ['tombstone', null, /tombstone/, 'malformed_dispatch'],
      [
        'tenant mismatch',
        h.dispatchValue('k-other-tenant', { tenant_id: 'someone-else' }),
        /does not match/,
        'tenant_mismatch',
      ],
    ];
    for (const [, value] of bad) await h.publish(value, { key: 'source-key' });
    await h.publish(h.dispatchValue('valid-after-bad'));

    expect(await result('valid-after-bad')).toMatchObject({ admission: 'created' });
    const messages = await h.readDlqMessages(bad.length);
    const dlq = messages.map((m) => m.record);
    // Each malformed record dead-lettered exactly once (one id per source record, none twice).
    expect(dlq).toHaveLength(bad.length);
    expect(new Set(dlq.map((r) => r.id)).size).toBe(bad.length);
    // contract §6: keyed <tenant>:<dispatch_key> when the dispatch_key is known, else the source record's key.
    expect(messages.filter((m) => m.record.dispatch_key !== null).length).toBeGreaterThanOrEqual(2);
    for (const { key, record } of messages) {
      expect(key).toBe(record.dispatch_key !== null ? `${h.tenant}:${record.dispatch_key}` : 'source-key');
    }
    for (const [i, [kind, value, reason, type]] of bad.entries()) {
      const rec = dlq.find((r) => r.source.offset === String(i));
      expect({ kind, type: rec?.type, error: rec?.error }).toEqual({
        kind,
        type,
        error: expect.stringMatching(reason),
      });
      expect(rec!.tenant_id).toBe(h.tenant);
      expect(rec!.topic).toBe(topics.dlq(h.tenant));
      expect(rec!.source).toMatchObject({ topic: topics.dispatch(h.tenant), partition: 0 });
      if (value === null) expect(rec!.payload).toBeNull();
      else if (Buffer.isBuffer(value)) expect(rec!.payload_base64).toBe(value.toString('base64'));
      else expect(rec!.payload).toBe(value);
    }
    expect(h.api.requests.map((r) => (r.json as { dispatch_key: string }).dispatch_key)).toEqual([
      'valid-after-bad',
    ]);
    const metrics = await ingester.metrics();
    expect(metricSum(metrics, 'dlq_messages_sent_total', { topic: topics.dlq(h.tenant) })).toBe(bad.length);
    expect(
      metricValue(metrics, 'poimen_dispatch_records_total', { tenant: h.tenant, outcome: 'dead_lettered' }),
    ).toBe(bad.length);
  });

  test('step 5: no bypass: with the worker stopped the ingester alone makes no API call; every call comes from postRun with a matching execution', async () => {
    h = await createHarness();
    const ingester = await h.startIngester();
    for (const k of ['nb-1', 'nb-2']) await h.publish(h.dispatchValue(k));
    await waitFor(
      async () =>
        metricValue(await ingester.metrics(), 'poimen_dispatch_records_total', {
          tenant: h.tenant,
          outcome: 'started',
        }) === 2,
      {
        what: 'both dispatches started in Temporal',
      },
    );
    expect(await status('nb-1')).toBe('RUNNING');
    expect(await status('nb-2')).toBe('RUNNING');
    expect(h.api.requests).toHaveLength(0);

    await h.startWorker();
    await result('nb-1');
    await result('nb-2');
    expect(h.api.requests).toHaveLength(2);
    for (const req of h.api.requests) {
      expect(req.headers['user-agent']).toBe(`poimen-relay/${VERSION}`);
      const key = (req.json as { dispatch_key: string }).dispatch_key;
      const history = await h.client.workflow.getHandle(h.wfId(key)).fetchHistory();
      const scheduled = (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes);
      expect(scheduled.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)).toEqual([
        'postRunWithInputBytes',
      ]);
      expect(await result(key)).toEqual({ run_id: req.runId, admission: 'created' });
    }
  });

  test('step 6: poimen_inbox_lag is exported, grows while Temporal is down (consumption paused) and falls back to 0 after draining', async () => {
    h = await createHarness();
    await h.startWorker();
    const ingester = await h.startIngester();
    const lag = async () =>
      metricValue(await ingester.metrics(), 'poimen_inbox_lag', {
        topic: topics.dispatch(h.tenant),
        partition: '0',
      });
    await h.publish(h.dispatchValue('lag-0'));
    await result('lag-0');
    await waitFor(async () => (await lag()) === 0, { what: 'lag 0 after the first dispatch' });

    await stopService('temporal');
    try {
      for (const k of ['lag-1', 'lag-2', 'lag-3']) await h.publish(h.dispatchValue(k));
      await waitFor(async () => (await lag()) === 3, { what: 'lag 3 while Temporal is down' });
      // The first start attempt fails at its deadline; from then on the ingester reports itself paused.
      const readyz = await waitFor(
        async () => {
          const res = await fetch(`http://127.0.0.1:${ingester.metricsPort}/readyz`);
          return res.status === 503 ? res.text() : undefined;
        },
        { what: '/readyz to report the pause' },
      );
      expect(readyz).toMatch(/paused/);
    } finally {
      await startService('temporal');
    }
    for (const k of ['lag-1', 'lag-2', 'lag-3'])
      expect(await result(k, 120_000)).toMatchObject({ admission: 'created' });
    await waitFor(async () => (await lag()) === 0, { what: 'lag back to 0 after draining' });
    expect(h.api.runs.size).toBe(4);
    expect(h.api.requests).toHaveLength(4);
  });

  test('exhausted retries (API always 503) give one dispatch_failure DLQ record with retry_count == max_retries, and the workflow Failed', async () => {
    // This test spends an attempt cap; the shipped default has none (only the 24 h budget would end it).
    h = await createHarness({ env: { RETRY_MAX_ATTEMPTS: '4' } });
    const worker = await h.startWorker();
    await h.startIngester();
    h.api.always({ kind: 'status', status: 503, body: 'upstream busy' });
    await h.publish(h.dispatchValue('always-503'));
    await waitFor(async () => (await status('always-503').catch(() => undefined)) === 'FAILED', {
      what: 'the workflow to fail',
    });

    const dead = await h.readDlqMessages(1);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.key).toBe(`${h.tenant}:always-503`);
    const rec = dead[0]!.record;
    expect(rec).toMatchObject({
      type: 'dispatch_failure',
      tenant_id: h.tenant,
      dispatch_key: 'always-503',
      workflow_id: h.wfId('always-503'),
      http_status: 503,
      retry_count: 4,
      max_retries: 4,
      target_url: `${h.api.url}/v1/runs`,
      topic: topics.dlq(h.tenant),
    });
    expect(rec.error).toMatch(/503.*upstream busy/);
    expect(rec.run_id).toBe((await h.client.workflow.getHandle(h.wfId('always-503')).describe()).runId);
    expect(JSON.parse(rec.payload!)).toEqual(JSON.parse(h.dispatchValue('always-503')));
    expect(h.api.requestsFor('always-503')).toHaveLength(4);
    // One entry per attempt (contract §6 attempts), the retries' interval between them.
    expect(rec.attempts?.map((a) => [a.attempt, a.http_status])).toEqual([
      [1, 503],
      [2, 503],
      [3, 503],
      [4, 503],
    ]);
    await expect(result('always-503')).rejects.toThrow(WorkflowFailedError);
    expect(
      metricSum(await worker.metrics(), 'dlq_messages_sent_total', { topic: topics.dlq(h.tenant) }),
    ).toBe(1);
  });

  test('a 422 is dead-lettered after one attempt', async () => {
    h = await createHarness();
    await h.startWorker();
    await h.startIngester();
    h.api.scriptFor('refused', { kind: 'status', status: 422, body: 'unknown workflow_ref' });
    await h.publish(h.dispatchValue('refused'));
    const dlq = await h.readDlq(1);
    expect(dlq).toHaveLength(1);
    const [rec] = dlq;
    // max_retries null: the shipped policy has no attempt cap (contract §6).
    expect(rec).toMatchObject({
      type: 'dispatch_failure',
      http_status: 422,
      retry_count: 1,
      max_retries: null,
    });
    expect(rec!.error).toMatch(/422/);
    expect(h.api.requestsFor('refused')).toHaveLength(1);
    await waitFor(async () => (await status('refused')) === 'FAILED', { what: 'the workflow to fail' });
    const err = await result('refused').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(String((err as WorkflowFailedError).cause?.message)).toMatch(
      /dead-lettered after 1 attempt\(s\): .*422/,
    );
  });

  test('the worker counts every runs-API answer by code and times every call and every success (contract §8 metrics)', async () => {
    h = await createHarness();
    const worker = await h.startWorker();
    await h.startIngester();
    h.api.scriptFor('m-retried', { kind: 'status', status: 503 }, { kind: 'status', status: 503 });
    h.api.scriptFor('m-refused', { kind: 'status', status: 422 });
    // Admitted, then the answer lost: the retry hears 409.
    h.api.scriptFor('m-lost', { kind: 'drop', afterAdmit: true });
    for (const k of ['m-retried', 'm-refused', 'm-lost']) await h.publish(h.dispatchValue(k));
    expect(await result('m-retried')).toMatchObject({ admission: 'created' });
    expect(await result('m-lost')).toMatchObject({ admission: 'existing' });
    await waitFor(async () => (await status('m-refused')) === 'FAILED', { what: 'm-refused to fail' });

    // What the double answered, as the worker must have counted it (a dropped socket is code "error").
    const expected = new Map<string, number>();
    for (const r of h.api.requests) {
      const code = r.answer === 'dropped' ? 'error' : String(r.answer);
      expected.set(code, (expected.get(code) ?? 0) + 1);
    }
    expect(Object.fromEntries(expected)).toEqual({ '503': 2, '201': 1, '422': 1, error: 1, '409': 1 });
    const text = await worker.metrics();
    for (const [code, n] of expected) {
      expect([code, metricValue(text, 'poimen_runs_api_requests_total', { code })]).toEqual([code, n]);
    }
    expect(metricValue(text, 'poimen_runs_api_request_duration_seconds_count')).toBe(h.api.requests.length);
    // Record → API latency is observed once per dispatch that reached the API with success.
    expect(metricValue(text, 'poimen_dispatch_latency_seconds_count')).toBe(2);
    expect(metricValue(text, 'poimen_dispatch_latency_seconds_sum')).toBeGreaterThan(0);
  });

  test('USE_EXISTING: a redelivery while the dispatch runs attaches to it: same run id, one execution, one call', async () => {
    h = await createHarness();
    const ingester = await h.startIngester();
    const started = async () =>
      metricValue(await ingester.metrics(), 'poimen_dispatch_records_total', {
        tenant: h.tenant,
        outcome: 'started',
      }) ?? 0;
    // No worker yet: the execution stays Running while the same record arrives again.
    await h.publish(h.dispatchValue('attach'));
    await waitFor(async () => (await started()) === 1, { what: 'the first start' });
    const handle = h.client.workflow.getHandle(h.wfId('attach'));
    const first = await handle.describe();
    expect(first.status.name).toBe('RUNNING');
    await h.publish(h.dispatchValue('attach'));
    // The second start attaches (counted started, not duplicate: the conflict policy is USE_EXISTING).
    await waitFor(async () => (await started()) === 2, { what: 'the redelivered record to attach' });
    expect(
      metricValue(await ingester.metrics(), 'poimen_dispatch_records_total', {
        tenant: h.tenant,
        outcome: 'duplicate',
      }) ?? 0,
    ).toBe(0);
    expect((await handle.describe()).runId).toBe(first.runId);
    await h.startWorker();
    expect(await handle.result()).toMatchObject({ admission: 'created' });
    // Visibility is eventually consistent: wait until it shows the completed run, then there must be no other.
    const executions = await waitFor(
      async () => {
        const seen: { runId: string; status: string }[] = [];
        for await (const e of h.client.workflow.list({ query: `WorkflowId = '${h.wfId('attach')}'` })) {
          seen.push({ runId: e.runId, status: e.status.name });
        }
        return seen.some((e) => e.status === 'COMPLETED') ? seen : undefined;
      },
      { what: 'the execution listed as completed' },
    );
    expect(executions).toEqual([{ runId: first.runId, status: 'COMPLETED' }]);
    expect(h.api.requestsFor('attach')).toHaveLength(1);
    await h.expectCommittedAtLogEnd();
  });

  test('Retry-After: 2 is respected (measured gap between attempts)', async () => {
    // Within the maximum interval: a Retry-After beyond it is capped (it_retry_after).
    h = await createHarness();
    await h.startWorker();
    await h.startIngester();
    h.api.scriptFor('slow-down', { kind: 'status', status: 429, retryAfter: '2' });
    await h.publish(h.dispatchValue('slow-down'));
    expect(await result('slow-down')).toMatchObject({ admission: 'created' });
    const [first, second] = h.api.requestsFor('slow-down');
    // The shipped initial interval is 1 s; only Retry-After explains a gap of two seconds.
    expect(second!.receivedAtMs - first!.receivedAtMs).toBeGreaterThanOrEqual(1900);
    expect(second!.receivedAtMs - first!.receivedAtMs).toBeLessThan(10_000);
  });

  test('a worker crash mid-activity (SIGKILL, restart) still makes exactly one run', async () => {
    h = await createHarness();
    const worker = await h.startWorker('worker-1');
    await h.startIngester();
    // The API holds the call until the worker is dead, then admits the run: the worker never hears back.
    h.api.scriptFor('crash', { kind: 'hold' });
    await h.publish(h.dispatchValue('crash'));
    await h.api.waitFor((a) => a.heldCount === 1, 60_000, 'the first attempt to be held at the API');
    await worker.kill();
    expect(h.api.release()).toBe(1);
    await h.api.waitFor((a) => a.runs.has('crash'), 60_000, 'the API to admit the run');

    await h.startWorker('worker-2');
    expect(await result('crash', 120_000)).toEqual({
      run_id: h.api.runs.get('crash'),
      admission: 'existing',
    });
    expect(h.api.runs.size).toBe(1);
    expect(h.api.requestsFor('crash').map((r) => r.answer)).toEqual([201, 409]);
  });

  test('a tenant topic created while the ingester runs is picked up without a restart', async () => {
    h = await createHarness({ env: { DISPATCH_TOPIC_PATTERN: '^poimen\\.late[a-z0-9]+\\.dispatch$' } });
    await h.startWorker();
    await h.startIngester();
    const late = `late${h.tenant.slice(1, 13)}`;
    const admin = h.kafka.admin();
    await admin.connect();
    await ensureTopics(admin, tenantTopicSpecs(late, { partitions: 1 }));
    await admin.disconnect();
    await h.publish(h.dispatchValue('late-1'), { topic: topics.dispatch(late) });
    const handle = h.client.workflow.getHandle(workflowId(late, 'late-1'));
    await waitFor(() => handle.describe().then(() => true), { what: 'the late tenant dispatch to start' });
    expect(await handle.result()).toMatchObject({ admission: 'created' });
    expect(h.api.requests[0]!.headers['x-tenant-id']).toBe(late);
  });

  test('SIGTERM drains: the ingester finishes in-flight starts, commits and exits 0', async () => {
    h = await createHarness();
    await h.startWorker();
    const ingester = await h.startIngester();
    for (let i = 0; i < 20; i++) await h.publish(h.dispatchValue(`drain-${i}`));
    await waitFor(
      async () =>
        (metricValue(await ingester.metrics(), 'poimen_dispatch_records_total', {
          tenant: h.tenant,
          outcome: 'started',
        }) ?? 0) >= 1,
      {
        what: 'the first start',
      },
    );
    expect(await ingester.stop()).toBe(0);
    const committed = (await h.offsets())[0]!.committed;
    // The drain committed what it started: the records with a workflow are exactly those below the committed
    // offset (a start finished but left uncommitted, or a commit past an unstarted record, both fail here).
    const started: number[] = [];
    for (let i = 0; i < 20; i++) {
      const exists = await h.client.workflow
        .getHandle(h.wfId(`drain-${i}`))
        .describe()
        .then(
          () => true,
          () => false,
        );
      if (exists) started.push(i);
    }
    expect(committed).toBeGreaterThanOrEqual(1);
    expect(started).toEqual(Array.from({ length: committed }, (_, i) => i));
    await h.startIngester('ingest-2');
    for (let i = 0; i < 20; i++) await result(`drain-${i}`);
    expect(h.api.runs.size).toBe(20);
    await h.expectCommittedAtLogEnd();
  });

  test('an ingester started while Kafka is down waits (not ready) and relays once the broker is back', async () => {
    h = await createHarness();
    await h.startWorker();
    await stopService('kafka');
    let ingesting: ReturnType<Harness['startIngester']> | undefined;
    try {
      let port: number | undefined;
      ingesting = h.startIngester('ingest', (p) => (port = p));
      // It has really met the outage, and says so: /readyz answers 503 naming Kafka.
      const notReady = await waitFor(
        async () => {
          if (port === undefined) return undefined;
          const r = await readyz({ metricsPort: port });
          return r.status === 503 && /kafka/i.test(r.text) ? r.text : undefined;
        },
        { what: 'the ingester to report the broker outage on /readyz' },
      );
      expect(notReady).toMatch(/^not ready: Kafka/);
    } finally {
      await startService('kafka');
    }
    // startIngester resolves only once /readyz is 200, and throws if the process exited meanwhile.
    await ingesting;
    await h.publish(h.dispatchValue('after-broker-start'));
    expect(await result('after-broker-start')).toMatchObject({ admission: 'created' });
    await h.expectCommittedAtLogEnd();
  });
});
