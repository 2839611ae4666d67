/**
 * `handleRecord` answers `dead_lettered` only once the DLQ has acknowledged the dead letter: the ingester commits
 * the record's offset on that answer, so a publish that fails must fail the record (it is retried, nothing lost).
 */
import type { Client } from '@temporalio/client';
import type { KafkaMessage } from 'kafkajs';
import type { DlqPublisher } from '../../src/kafka/dlqPublisher';
import { handleRecord, type StartContext } from '../../src/ingest/startDispatch';
import { DEFAULT_DISPATCH_POLICY } from '../../src/contract/workflow';

function context(publish: () => Promise<void>): StartContext {
  return {
    client: {} as Client,
    dlq: { publish } as unknown as DlqPublisher,
    taskQueue: 'tq-unit',
    maxBytes: 1_048_576,
    maxInputBytes: 2_000_000,
    policy: DEFAULT_DISPATCH_POLICY,
    startTimeoutMs: 5_000,
  };
}

const malformed = {
  key: Buffer.from('k'),
  value: Buffer.from('not json'),
  timestamp: '1700000000000',
  attributes: 0,
  offset: '41',
  headers: {},
} as KafkaMessage;

describe('startDispatch: a dead letter is handled only once the DLQ acknowledged it', () => {
  test('a DLQ publish that fails makes the record fail, not `dead_lettered`', async () => {
    const refused = new Error('DLQ broker unreachable');
    const ctx = context(() => Promise.reject(refused));
    await expect(
      handleRecord(ctx, { tenant: 'acme', topic: 'poimen.acme.dispatch', partition: 0, message: malformed }),
    ).rejects.toBe(refused);
  });

  test('the answer waits for the acknowledgement', async () => {
    let acknowledge!: () => void;
    const ctx = context(() => new Promise<void>((r) => (acknowledge = r)));
    let answer: string | undefined;
    const handled = handleRecord(ctx, {
      tenant: 'acme',
      topic: 'poimen.acme.dispatch',
      partition: 0,
      message: malformed,
    }).then((a) => (answer = a));
    await new Promise((r) => setTimeout(r, 20));
    expect(answer).toBeUndefined();
    acknowledge();
    await handled;
    expect(answer).toBe('dead_lettered');
  });
});
