/**
 * The T10.7 verification suite: real Kafka, real Temporal, the relay's real processes, and the runs API double
 * recording every HTTP call. Each test has its own tenant, consumer group and task queue.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { topics } from '../src/contract';
import { VERSION } from '../src/version';
import { startService, stopService } from './support/faults';
import { type Harness, createHarness } from './support/relayHarness';
import { metricValue } from './support/relay';
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
  });
});
