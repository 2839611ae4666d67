/**
 * What an execution was started with, read back from its start event (src/temporal/history.ts): the input, and the
 * redrive count the ingester put in the start memo, which a dead letter whose source record is gone carries on.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { NativeConnection } from '@temporalio/worker';
import { startReader } from '../../src/temporal/history';

const INPUT = { tenant: 'acme', dispatch: { dispatch_key: 'd-1' } };

function connectionWith(memo: Record<string, unknown> | undefined): NativeConnection {
  const started = {
    input: { payloads: [defaultPayloadConverter.toPayload(INPUT)] },
    ...(memo ? { memo: { fields: memo } } : {}),
  };
  return {
    workflowService: {
      getWorkflowExecutionHistory: async () => ({
        history: { events: [{ workflowExecutionStartedEventAttributes: started }] },
      }),
    },
  } as unknown as NativeConnection;
}

const read = (memo?: Record<string, unknown>) => startReader(connectionWith(memo), 'default')('wf', 'run');

test('the input and a redrive count written as a number (as the ingester writes it)', async () => {
  await expect(read({ redrive_count: defaultPayloadConverter.toPayload(2) })).resolves.toEqual({
    input: INPUT,
    redriveCount: 2,
  });
});

test('a count written as text reads the same; none, another key, or one that is not a count reads 0', async () => {
  expect((await read({ redrive_count: defaultPayloadConverter.toPayload('3') })).redriveCount).toBe(3);
  expect((await read()).redriveCount).toBe(0);
  expect((await read({ redrive: defaultPayloadConverter.toPayload(2) })).redriveCount).toBe(0);
  expect((await read({ redrive_count: defaultPayloadConverter.toPayload(-1) })).redriveCount).toBe(0);
});

test('a memo that cannot be decoded reads 0 and never fails the read of the input', async () => {
  const broken = { metadata: { encoding: Buffer.from('binary/unknown') }, data: Buffer.from([1]) };
  await expect(read({ redrive_count: broken })).resolves.toEqual({ input: INPUT, redriveCount: 0 });
});
