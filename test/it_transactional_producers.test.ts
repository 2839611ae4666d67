/**
 * Dispatch records written in Kafka transactions (contract §2, "Committed offsets and lag"): the ingester reads
 * committed records only, starts one run per committed dispatch and none for an aborted one, and its group's
 * committed offset reaches the log end although the log ends with transaction markers it never sees as records.
 * Real Kafka, real Temporal, the relay's real processes.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Producer } from 'kafkajs';
import { topics } from '../src/contract';
import { type Harness, createHarness } from './support/relayHarness';
import { metricValue } from './support/relay';
import { uniqueName } from './support/names';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

let h: Harness;
let txProducer: Producer | undefined;
afterEach(async () => {
  await txProducer?.disconnect().catch(() => undefined);
  txProducer = undefined;
  await h?.cleanup();
});

/** One transaction of the given dispatches, committed or aborted. */
async function transaction(keys: string[], end: 'commit' | 'abort', pad: string): Promise<void> {
  const tx = await txProducer!.transaction();
  await tx.send({
    topic: topics.dispatch(h.tenant),
    acks: -1,
    messages: keys.map((k) => ({ key: `${h.tenant}:${k}`, value: h.dispatchValue(k, { pad }) })),
  });
  await (end === 'commit' ? tx.commit() : tx.abort());
}

/**
 * Committed and aborted transactions, the log ending with an aborted one, then the drain's checks. `pad` sizes
 * the records: larger than the ingester's per-partition fetch bound, a transaction's marker comes in a fetch of
 * its own, with no record the relay is handed.
 */
async function transactionsThenDrain(opts: { env?: Record<string, string>; pad: string }): Promise<void> {
  h = await createHarness(opts.env ? { env: opts.env } : {});
  await h.startWorker();
  const ingester = await h.startIngester();
  txProducer = h.kafka.producer({
    transactionalId: uniqueName('it-txn'),
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await txProducer.connect();

  const committed = ['t-1', 't-2', 't-3', 't-4'];
  const aborted = ['x-1', 'x-2', 'x-3'];
  await transaction(['t-1', 't-2', 't-3'], 'commit', opts.pad);
  await transaction(['x-1', 'x-2'], 'abort', opts.pad);
  await transaction(['t-4'], 'commit', opts.pad);
  for (const k of committed) {
    const handle = h.client.workflow.getHandle(h.wfId(k));
    await waitFor(() => handle.describe().then(() => true), { what: `workflow ${h.wfId(k)} to exist` });
    expect(await handle.result()).toMatchObject({ admission: 'created' });
  }
  // Aborted last: no committed record after it whose commit would carry the group's offset past it.
  await transaction(['x-3'], 'abort', opts.pad);

  await h.expectCommittedAtLogEnd();
  const lag = async () =>
    metricValue(await ingester.metrics(), 'poimen_inbox_lag', {
      topic: topics.dispatch(h.tenant),
      partition: '0',
    });
  let last: number | undefined;
  await waitFor(async () => (last = await lag()) === 0, {
    what: 'poimen_inbox_lag 0 after the drain',
  }).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; last read ${String(last)}`);
  });

  for (const k of committed) expect(h.api.requestsFor(k)).toHaveLength(1);
  for (const k of aborted) expect(h.api.requestsFor(k)).toHaveLength(0);
  expect(h.api.runs.size).toBe(committed.length);
  for (const k of aborted) {
    await expect(h.client.workflow.getHandle(h.wfId(k)).describe()).rejects.toThrow(WorkflowNotFoundError);
  }
}

describe('transactional producers', () => {
  test('one run per committed dispatch, none per aborted one; the group commits to the log end and the lag reads 0', async () => {
    await transactionsThenDrain({ pad: '' });
  });

  test('a transaction marker fetched on its own (records over the per-partition fetch bound) is committed past too', async () => {
    // The smallest bound the relay accepts; each record is larger, so a fetch holds one record batch.
    await transactionsThenDrain({
      env: { POIMEN_KAFKA_FETCH_MAX_BYTES_PER_PARTITION: '1024' },
      pad: 'p'.repeat(2048),
    });
  });
});
