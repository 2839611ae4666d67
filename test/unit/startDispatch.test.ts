/* eslint-disable max-lines -- one case per outcome of startDispatch, sharing one fake client */
/**
 * `handleRecord` against a stub Temporal client and DLQ publisher: what a start asks of Temporal (id, id
 * policies, search attributes, memo), and what each start error becomes. The integration suites cover the same
 * paths on the real stack in minutes; this fails in a second when one of them is changed.
 */
import { Writable } from 'node:stream';
import { ServiceError, WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { KafkaMessage } from 'kafkajs';
import { WORKFLOW_TYPE, type DlqRecord } from '../../src/contract';
import type { DlqPublisher } from '../../src/kafka/dlqPublisher';
import { handleRecord, type StartContext } from '../../src/ingest/startDispatch';
import { createLogger } from '../../src/logger';
import { DEFAULT_DISPATCH_POLICY, type DispatchInput } from '../../src/contract/workflow';

interface StartCall {
  type: string;
  options: Record<string, unknown> & { args: [DispatchInput] };
}

function stubs(startError?: unknown) {
  const starts: StartCall[] = [];
  const published: { record: DlqRecord; key: string | Buffer | null }[] = [];
  const deadlines: number[] = [];
  const client = {
    connection: {
      withDeadline: async <T>(deadline: number, fn: () => Promise<T>) => {
        deadlines.push(deadline);
        return fn();
      },
    },
    workflow: {
      // The newest run, as a start refused with AlreadyStarted finds it: completed, unless a test says otherwise.
      getHandle: () => ({ describe: async () => ({ status: { name: 'COMPLETED' }, memo: {} }) }),
      start: async (type: string, options: StartCall['options']) => {
        starts.push({ type, options });
        if (startError !== undefined) throw startError;
        return { firstExecutionRunId: 'run-0001' };
      },
    },
  } as unknown as Client;
  const dlq = {
    publish: async (record: DlqRecord, key: string | Buffer | null) => {
      published.push({ record, key });
    },
  } as unknown as DlqPublisher;
  const ctx: StartContext = {
    client,
    dlq,
    taskQueue: 'tq-unit',
    maxBytes: 1_048_576,
    maxInputBytes: 2_000_000,
    policy: DEFAULT_DISPATCH_POLICY,
    startTimeoutMs: 5_000,
  };
  return { ctx, starts, published, deadlines };
}

function message(value: string | null, headers: KafkaMessage['headers'] = {}): KafkaMessage {
  return {
    key: Buffer.from('k'),
    value: value === null ? null : Buffer.from(value),
    timestamp: '1700000000000',
    attributes: 0,
    offset: '41',
    headers,
  } as KafkaMessage;
}

const VALUE = JSON.stringify({
  workflow_ref: 'onboarding@v3',
  input: { user: 42 },
  goal_id: 'g-17',
  dispatch_key: 'd-1',
});
const TOPIC = 'poimen.acme.dispatch';

/** A record of tenant acme on TOPIC, as the ingester hands it to handleRecord. */
function acme(message: KafkaMessage, partition = 0) {
  return { tenant: 'acme', topic: TOPIC, partition, message };
}

function grpcError(code: number, details: string): Error {
  return Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
}

describe('startDispatch: one Kafka record to one workflow start', () => {
  test('starts `dispatch` with the SPEC id, the id policies, the search attributes and the source memo', async () => {
    const { ctx, starts, published, deadlines } = stubs();
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const before = Date.now();
    const outcome = await handleRecord(ctx, acme(message(VALUE, { traceparent }), 3));
    expect(outcome).toBe('started');
    expect(published).toEqual([]);
    expect(starts).toHaveLength(1);
    const [{ type, options }] = starts as [StartCall];
    expect(type).toBe(WORKFLOW_TYPE);
    expect(options.workflowId).toBe('dispatch:acme:d-1');
    expect(options.taskQueue).toBe('tq-unit');
    // A redelivery while the dispatch runs attaches; a closed one is not started again by this start (a failed one
    // runs anew only for a newer record: failedRun.test.ts).
    expect(options.workflowIdConflictPolicy).toBe('USE_EXISTING');
    expect(options.workflowIdReusePolicy).toBe('REJECT_DUPLICATE');
    const attrs = (options.typedSearchAttributes as { key: { name: string }; value: unknown }[]).map((p) => [
      p.key.name,
      p.value,
    ]);
    expect(Object.fromEntries(attrs)).toEqual({
      TenantId: 'acme',
      DispatchKey: 'd-1',
      WorkflowRef: 'onboarding@v3',
      GoalId: 'g-17',
    });
    expect(options.memo).toEqual({
      source_topic: TOPIC,
      partition: 3,
      offset: '41',
      record_timestamp: '1700000000000',
    });
    const [input] = options.args;
    expect(input.tenant).toBe('acme');
    expect(input.traceparent).toBe(traceparent);
    expect(input.policy).toEqual(DEFAULT_DISPATCH_POLICY);
    expect(input.source).toEqual({ topic: TOPIC, partition: 3, offset: '41', timestamp: '1700000000000' });
    expect(input.dispatch).toMatchObject({ dispatch_key: 'd-1', workflow_ref: 'onboarding@v3' });
    // The start is bounded by the configured deadline, so an outage surfaces as an error to retry.
    expect(deadlines[0]! - before).toBeGreaterThanOrEqual(5_000);
    expect(deadlines[0]! - Date.now()).toBeLessThanOrEqual(5_000);
  });

  test("the tenant is the start's fairness key; a weight only for a tenant POIMEN_TENANT_WEIGHTS names", async () => {
    const { ctx, starts } = stubs();
    await handleRecord({ ...ctx, tenantWeights: { beta: 0.5 } }, acme(message(VALUE)));
    await handleRecord(
      { ...ctx, tenantWeights: { beta: 0.5 } },
      { tenant: 'beta', topic: 'poimen.beta.dispatch', partition: 0, message: message(VALUE) },
    );
    expect((starts as StartCall[]).map((s) => s.options.priority)).toEqual([
      { fairnessKey: 'acme' },
      { fairnessKey: 'beta', fairnessWeight: 0.5 },
    ]);
  });

  test("a redriven record's count goes into the start memo, so its dead letter keeps it", async () => {
    const { ctx, starts } = stubs();
    await handleRecord(ctx, acme(message(VALUE, { 'poimen-redrive-count': Buffer.from('2') })));
    expect(starts[0]!.options.memo).toMatchObject({ redrive_count: 2 });
  });

  test('a null goal_id is not indexed', async () => {
    const { ctx, starts } = stubs();
    await handleRecord(ctx, acme(message(VALUE.replace('"g-17"', 'null'))));
    const names = (starts[0]!.options.typedSearchAttributes as { key: { name: string } }[]).map(
      (p) => p.key.name,
    );
    expect(names.sort()).toEqual(['DispatchKey', 'TenantId', 'WorkflowRef']);
  });

  test('AlreadyStarted (a completed dispatch redelivered) is a duplicate: no dead letter, no error', async () => {
    const { ctx, published } = stubs(
      new WorkflowExecutionAlreadyStartedError('already', 'dispatch:acme:d-1', WORKFLOW_TYPE),
    );
    await expect(handleRecord(ctx, acme(message(VALUE)))).resolves.toBe('duplicate');
    expect(published).toEqual([]);
  });

  test('INVALID_ARGUMENT dead-letters this record with the server’s reason, keyed <tenant>:<dispatch_key>', async () => {
    const { ctx, published } = stubs(
      new ServiceError('Failed to start Workflow', { cause: grpcError(3, 'Blob data size exceeds limit.') }),
    );
    await expect(handleRecord(ctx, acme(message(VALUE), 2))).resolves.toBe('dead_lettered');
    expect(published).toHaveLength(1);
    const [{ record, key }] = published as [(typeof published)[number]];
    expect(key).toBe('acme:d-1');
    expect(record.type).toBe('malformed_dispatch');
    expect(record.dispatch_key).toBe('d-1');
    expect(record.error).toContain('INVALID_ARGUMENT');
    expect(record.error).toContain('Blob data size exceeds limit.');
    // The source record's coordinates, key and headers, so a replay re-publishes the same message.
    expect(record.source).toEqual({
      topic: TOPIC,
      partition: 2,
      offset: '41',
      timestamp: '1700000000000',
      key: 'k',
      headers: {},
    });
    expect(record.payload).toBe(VALUE);
  });

  test.each([
    ['UNAVAILABLE', 14],
    ['DEADLINE_EXCEEDED', 4],
    ['RESOURCE_EXHAUSTED', 8],
  ])('%s is thrown for the ingester to retry, nothing dead-lettered', async (_name, code) => {
    const err = new ServiceError('Failed to start Workflow', { cause: grpcError(code, 'x') });
    const { ctx, published } = stubs(err);
    await expect(handleRecord(ctx, acme(message(VALUE)))).rejects.toBe(err);
    expect(published).toEqual([]);
  });

  test('a malformed record is dead-lettered before any start; one with a dispatch_key is keyed by it', async () => {
    const { ctx, starts, published } = stubs();
    const bad = JSON.stringify({ workflow_ref: 'w', input: {}, dispatch_key: 'd-2', goal_id: 7 });
    await expect(handleRecord(ctx, acme(message(bad)))).resolves.toBe('dead_lettered');
    await expect(handleRecord(ctx, acme(message('not json')))).resolves.toBe('dead_lettered');
    expect(starts).toEqual([]);
    expect(published.map((p) => [p.record.type, p.key?.toString()])).toEqual([
      ['malformed_dispatch', 'acme:d-2'],
      ['malformed_dispatch', 'k'],
    ]);
    // The same source record gives the same id (a redelivery repeats it recognisably).
    const again = stubs();
    await handleRecord(again.ctx, acme(message('not json')));
    expect(again.published[0]!.record.id).toBe(published[1]!.record.id);
  });

  test('a dead letter written at ingest leaves the record’s credential headers out', async () => {
    const { ctx, published } = stubs();
    const headers = { authorization: Buffer.from('Bearer s3cret'), 'x-origin': Buffer.from('billing') };
    await handleRecord(ctx, acme(message('not json', headers)));
    expect(published[0]!.record.source.headers).toEqual({ 'x-origin': 'billing' });
    expect(JSON.stringify(published[0]!.record)).not.toContain('s3cret');
  });

  test('a record at an offset an earlier record had (its topic made anew) is dead-lettered under its own id', async () => {
    const { ctx, published } = stubs();
    const later = { ...message('not json either'), timestamp: '1700000099000' } as KafkaMessage;
    await handleRecord(ctx, acme(message('not json')));
    await handleRecord(ctx, acme(later));
    // Same topic, partition and offset (41), another record: two dead letters, two ids.
    expect(published.map((p) => p.record.source.offset)).toEqual(['41', '41']);
    expect(published[1]!.record.id).not.toBe(published[0]!.record.id);
    // Only the value differs (a producer that sets no timestamp, LogAppendTime in the same millisecond).
    await handleRecord(ctx, acme(message('not json, third')));
    expect(new Set(published.map((p) => p.record.id)).size).toBe(3);
  });
});

describe('startDispatch: each record’s outcome at debug', () => {
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

  function debugLines() {
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(
          ...chunk
            .toString()
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as Record<string, unknown>),
        );
        done();
      },
    });
    return { lines, log: createLogger('unit', 'debug', { format: 'json', destination }) };
  }

  test('started: tenant, dispatch_key, workflow_id, the Temporal run id and the traceparent', async () => {
    const { lines, log } = debugLines();
    await handleRecord(stubs().ctx, acme(message(VALUE, { traceparent })), { log });
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'debug',
        msg: 'record started its workflow',
        outcome: 'started',
        tenant: 'acme',
        dispatch_key: 'd-1',
        workflow_id: 'dispatch:acme:d-1',
        temporal_run_id: 'run-0001',
        traceparent,
        offset: '41',
      }),
    ]);
  });

  test('already started: the workflow it belongs to, no run id (Temporal does not say which)', async () => {
    const { lines, log } = debugLines();
    const { ctx } = stubs(
      new WorkflowExecutionAlreadyStartedError('already', 'dispatch:acme:d-1', WORKFLOW_TYPE),
    );
    await handleRecord(ctx, acme(message(VALUE)), { log });
    expect(lines).toEqual([
      expect.objectContaining({
        msg: 'record already handled: its dispatch completed, or failed for this record or an earlier one',
        outcome: 'duplicate',
        tenant: 'acme',
        dispatch_key: 'd-1',
        workflow_id: 'dispatch:acme:d-1',
      }),
    ]);
    expect(lines[0]).not.toHaveProperty('temporal_run_id');
  });

  test('dead-lettered: the reason and type, and no workflow_id (none was started)', async () => {
    const { lines, log } = debugLines();
    const bad = JSON.stringify({ workflow_ref: 'w', input: {}, dispatch_key: 'd-2', goal_id: 7 });
    await handleRecord(stubs().ctx, acme(message(bad, { traceparent })), { log });
    expect(lines).toEqual([
      expect.objectContaining({
        msg: 'record dead-lettered',
        outcome: 'dead_lettered',
        type: 'malformed_dispatch',
        reason: expect.stringContaining('goal_id'),
        tenant: 'acme',
        dispatch_key: 'd-2',
        traceparent,
      }),
    ]);
    expect(lines[0]).not.toHaveProperty('workflow_id');
  });
});
