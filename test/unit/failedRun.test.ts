/**
 * A record whose dispatch's newest run is closed (`handleRecord` against a stub Temporal client): a completed
 * dispatch is a duplicate; a failed one runs anew only for a record newer than the one that started that run (a
 * replay), never for a redelivery of that record or of one before it. The real stack: it_failed_redelivery.
 */
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { KafkaMessage } from 'kafkajs';
import { WORKFLOW_TYPE, dlqRecordId } from '../../src/contract';
import { failureSeed } from '../../src/activities/deadLetter';
import { handledBy } from '../../src/ingest/failedRun';
import { handleRecord, type StartContext } from '../../src/ingest/startDispatch';
import { DEFAULT_DISPATCH_POLICY } from '../../src/contract/workflow';

const TOPIC = 'poimen.acme.dispatch';

/** A record of tenant acme on TOPIC, as the ingester hands it to handleRecord. */
function acme(message: KafkaMessage, partition = 0) {
  return { tenant: 'acme', topic: TOPIC, partition, message };
}
const VALUE = JSON.stringify({ workflow_ref: 'w@1', input: {}, goal_id: null, dispatch_key: 'd-1' });
const ran = (offset: string, timestamp = '1700000000000', partition = 0) => ({
  source_topic: TOPIC,
  partition,
  offset,
  record_timestamp: timestamp,
});

/** A dispatch whose newest run is `status`, started from the record `memo` names. */
function temporal(status: string, memo: Record<string, unknown>) {
  const policies: string[] = [];
  const client = {
    connection: { withDeadline: <T>(_d: number, fn: () => Promise<T>) => fn() },
    workflow: {
      getHandle: () => ({ describe: async () => ({ status: { name: status }, memo }) }),
      start: async (_type: string, o: { workflowIdReusePolicy: string }) => {
        policies.push(o.workflowIdReusePolicy);
        // Temporal's answer: REJECT_DUPLICATE refuses any closed run; the failed-only policy a completed one.
        const refused =
          o.workflowIdReusePolicy === 'REJECT_DUPLICATE' ||
          (status === 'COMPLETED' && o.workflowIdReusePolicy === 'ALLOW_DUPLICATE_FAILED_ONLY');
        if (refused)
          throw new WorkflowExecutionAlreadyStartedError('already', 'dispatch:acme:d-1', WORKFLOW_TYPE);
        return { firstExecutionRunId: 'run-2' };
      },
    },
  } as unknown as Client;
  const ctx = {
    client,
    dlq: { publish: async () => undefined },
    taskQueue: 'tq',
    maxBytes: 1_048_576,
    maxInputBytes: 2_000_000,
    policy: DEFAULT_DISPATCH_POLICY,
    startTimeoutMs: 5_000,
  } as unknown as StartContext;
  return { ctx, policies };
}

const record = (offset: string, timestamp = '1700000000000') =>
  ({ key: null, value: Buffer.from(VALUE), timestamp, attributes: 0, offset, headers: {} }) as KafkaMessage;

describe('a record of a dispatch whose newest run is closed', () => {
  test('the redelivered record that started the failed run is absorbed: no second run', async () => {
    const { ctx, policies } = temporal('FAILED', ran('7'));
    await expect(handleRecord(ctx, acme(record('7')))).resolves.toBe('duplicate');
    expect(policies).toEqual(['REJECT_DUPLICATE']);
  });

  test('a record before it on the same partition is absorbed too (both redelivered after a replay)', async () => {
    const { ctx, policies } = temporal('FAILED', ran('9'));
    await expect(handleRecord(ctx, acme(record('7')))).resolves.toBe('duplicate');
    expect(policies).toEqual(['REJECT_DUPLICATE']);
  });

  test('a newer record (a replay) runs the failed dispatch anew', async () => {
    const { ctx, policies } = temporal('FAILED', ran('7'));
    await expect(handleRecord(ctx, acme(record('12', '1700000005000')))).resolves.toBe('started');
    expect(policies).toEqual(['REJECT_DUPLICATE', 'ALLOW_DUPLICATE_FAILED_ONLY']);
  });

  test('a completed dispatch is a duplicate for any record', async () => {
    const { ctx } = temporal('COMPLETED', ran('7'));
    await expect(handleRecord(ctx, acme(record('12')))).resolves.toBe('duplicate');
  });

  test('what tells the record that ran, or an earlier one, from any other', () => {
    const src = (offset: string, timestamp = '1700000000000', partition = 0, topic = TOPIC) => ({
      topic,
      partition,
      offset,
      timestamp,
    });
    expect(handledBy(ran('7'), src('7'))).toBe(true);
    expect(handledBy(ran('7'), src('3'))).toBe(true);
    expect(handledBy(ran('7'), src('8'))).toBe(false);
    // A topic made anew repeats offsets: a record written after the run is not the one that ran.
    expect(handledBy(ran('7'), src('7', '1700000009000'))).toBe(false);
    expect(handledBy(ran('7'), src('3', '1700000009000'))).toBe(false);
    // Another partition (a producer's other key) or topic says nothing of order; a run without memo cannot tell.
    expect(handledBy(ran('7', '1700000000000', 1), src('3'))).toBe(false);
    expect(handledBy(ran('7'), src('3', '1700000000000', 0, 'poimen.beta.dispatch'))).toBe(false);
    expect(handledBy(undefined, src('7'))).toBe(false);
    expect(handledBy({}, src('7'))).toBe(false);
  });
});

test('a dispatch_failure id names the dispatch and its source record, not the run: another run of the same record repeats it, a replay gets its own', () => {
  const source = { topic: TOPIC, partition: 0, offset: '7', timestamp: '1700000000000' };
  const id = (run: string, s = source) =>
    dlqRecordId(failureSeed({ workflowId: 'dispatch:acme:d-1', source: s, workflowRunId: run } as never));
  expect(id('run-1')).toBe(id('run-2'));
  expect(id('run-2', { ...source, offset: '12' })).not.toBe(id('run-1'));
  expect(dlqRecordId(failureSeed({ workflowId: 'dispatch:acme:d-2', source }))).not.toBe(id('run-1'));
});
