/**
 * Kept batches (src/ingest/keptBatches.ts) in the orders an adversarial review found their first version wrong: a
 * wait for room ended by a rejoin left admission holding the batch; a partition waiting for room the old way was
 * resumed under a later kept batch; a run kafkajs restarted had its kept batch resumed by the old run's end.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import type { EachBatchPayload, KafkaMessage } from 'kafkajs';
import { TenantAdmission } from '../../src/ingest/admission';
import { Ingester } from '../../src/ingest/ingester';
import { handleRecord } from '../../src/ingest/startDispatch';
import { waitFor } from '../support/wait';
import { ingesterInternals, ingesterWithAdmission, neverClosing } from '../support/ingesterInternals';

jest.mock('../../src/ingest/startDispatch', () => ({ handleRecord: jest.fn() }));
const handle = handleRecord as jest.MockedFunction<typeof handleRecord>;

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

interface Deferred<T> {
  promise: Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
}
/** Every deferred a test made: released after it, so a failed test leaves no batch running. */
const made: Deferred<never>[] = [];
function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  const d = { promise, resolve, reject };
  made.push(d as unknown as Deferred<never>);
  return d;
}
const tick = () => new Promise((r) => setImmediate(r));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TOPIC = 'poimen.acme.dispatch';

function stubConsumer() {
  const calls: string[] = [];
  const stub = {
    calls,
    commits: [] as string[],
    commitOffsets: jest.fn(async (offsets: { offset: string }[]) => {
      stub.commits.push(offsets[0]!.offset);
    }),
    pause: jest.fn((t: { topic: string; partitions?: number[] }[]) =>
      calls.push(`pause ${t[0]!.topic}/${t[0]!.partitions}`),
    ),
    resume: jest.fn((t: { topic: string; partitions?: number[] }[]) =>
      calls.push(`resume ${t[0]!.topic}/${t[0]!.partitions}`),
    ),
  };
  return stub;
}

/** A batch whose record values are views into one `size`-byte fetch response, as kafkajs decodes them. */
function payloadOf(
  partition: number,
  offsets: number[],
  consumer: ReturnType<typeof stubConsumer>,
  o: { size?: number; running?: () => boolean; resolved?: string[] } = {},
): EachBatchPayload {
  const response = Buffer.alloc(o.size ?? 100 * offsets.length);
  const messages = offsets.map(
    (off, i) =>
      ({
        offset: String(off),
        key: null,
        value: response.subarray(i * 2, i * 2 + 2).fill('{}'),
        headers: {},
      }) as unknown as KafkaMessage,
  );
  return {
    batch: { topic: TOPIC, partition, messages, lastOffset: () => String(offsets.at(-1)) },
    commitOffsetsIfNecessary: async (c: { topics: { partitions: { offset: string }[] }[] }) =>
      consumer.commitOffsets([{ offset: c.topics[0]!.partitions[0]!.offset }]),
    resolveOffset: (off: string) => o.resolved?.push(off),
    heartbeat: async () => undefined,
    isRunning: o.running ?? (() => true),
    isStale: () => false,
  } as unknown as EachBatchPayload;
}

function ingesterWith(admission: TenantAdmission, overrides: Partial<Record<string, number>>) {
  admissions.push(admission);
  const ing = ingesterWithAdmission(admission, overrides);
  ingesters.push(ing);
  return ing;
}

/** An ingester whose tenants may keep 2 open that never close, joined to partition 0 with a stub consumer. */
function boundAtTwo() {
  const ing = ingesterWith(neverClosing(2), { maxInFlight: 8, commitEveryRecords: 1 });
  const consumer = stubConsumer();
  const internals = ingesterInternals(ing);
  internals.group.consumer = consumer;
  internals.onGroupJoin(consumer, { [TOPIC]: [0] });
  return { consumer, internals };
}

const admissions: TenantAdmission[] = [];
const ingesters: Ingester[] = [];
beforeEach(() => handle.mockReset());
afterEach(async () => {
  for (const ing of ingesters.splice(0)) {
    const internals = ingesterInternals(ing);
    internals.group.consumer = undefined;
    for (const d of made.splice(0)) d.resolve(undefined as never);
    await internals.turns.settled();
  }
  for (const a of admissions.splice(0)) a.close();
});

test('a kept batch woken from its wait for room by a rejoin that moved its partition away is not kept alive by admission afterwards', async () => {
  // Every record starts an execution that stays open: the tenant's 2 slots never come back in this test.
  handle.mockImplementation(async (_ctx, { message: m }, { onStarted } = {}) => {
    onStarted?.(`wf-${m.offset}`, 'run');
    return 'started';
  });
  const { consumer, internals } = boundAtTwo();

  // A 1 MB fetch: the batch takes 2 records and waits for room from memory, its partition paused.
  let response: WeakRef<ArrayBufferLike>;
  await (async () => {
    const p = payloadOf(0, [0, 1, 2, 3], consumer, { size: 1_000_000 });
    response = new WeakRef((p.batch.messages[0]!.value as Buffer).buffer);
    await internals.turns.run(consumer, p);
  })();
  expect(consumer.calls).toEqual([`pause ${TOPIC}/0`]);

  // A rebalance gives partition 0 to another member: the batch wakes, ends and lets its bytes go.
  internals.onGroupJoin(consumer, { [TOPIC]: [1] });
  await waitFor(() => consumer.calls.length === 2, { timeoutMs: 1000, what: 'the kept batch to end' });
  expect(consumer.calls).toEqual([`pause ${TOPIC}/0`, `resume ${TOPIC}/0`]);
  await tick();
  handle.mockClear(); // jest's record of the calls holds the records too

  // The gauge says nothing is kept; the megabyte should be collectable.
  for (let i = 0; i < 3; i++) {
    gc();
    await tick();
  }
  // Before the fix: admission's waiter map still holds the batch's `wake` (room() never removes it), whose
  // closure chain (room's `early` -> the batch turn's context) keeps the batch, payload and fetch response alive
  // until the tenant next has room: uncounted memory, one batch per partition that left while waiting.
  expect(response!.deref()).toBeUndefined();
});

test('a partition waiting for room the old way (its batch too big to keep) is not resumed by that wait while a later batch of it is kept', async () => {
  // Each started execution stays open until the test closes it.
  const closes = new Map<string, () => void>();
  const gates = new Map<number, Deferred<void>>();
  const attempts = new Map<number, number>();
  handle.mockImplementation(async (_ctx, { message: m }, { onStarted } = {}) => {
    const o = Number(m.offset);
    const n = (attempts.get(o) ?? 0) + 1;
    attempts.set(o, n);
    if (o === 7 && n === 1) throw new Error('Temporal unreachable'); // a blip
    if (o >= 7) {
      const d = deferred<void>();
      gates.set(o, d);
      await d.promise;
    }
    onStarted?.(`wf-${o}`, 'run');
    return 'started';
  });
  // 8 open per tenant: a waiting partition is resumed once 4 are free (half the share).
  const admission = new TenantAdmission({
    maxOpen: 0,
    tenantMaxOpen: 8,
    watch: (workflowId) => new Promise<void>((resolve) => closes.set(workflowId, resolve)),
  });
  // Kept bytes bounded at 2 x 1,000.
  const ing = ingesterWith(admission, {
    maxInFlight: 1,
    commitEveryRecords: 1,
    batchSliceMs: 50,
    fetchMaxBytes: 1000,
  });
  const consumer = stubConsumer();
  const internals = ingesterInternals(ing);
  internals.group.consumer = consumer;
  internals.onGroupJoin(consumer, { [TOPIC]: [0] });

  // B0: a 100 kB fetch. 8 records open the tenant's share; the 9th finds it full and the batch is too big to
  // keep, so it waits the old way (waitForRoom: pause + a whenRoom resume). Record 7, in flight, fails: outage.
  await internals.turns.run(
    consumer,
    payloadOf(0, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], consumer, { size: 100_000 }),
  );
  expect(consumer.calls).toEqual([`pause ${TOPIC}/0`, `pause ${TOPIC}/0`]);
  // The outage's backoff resumes the partition; its old wait for room is still registered.
  await waitFor(() => consumer.calls.length === 3, { timeoutMs: 2000, what: 'the backoff resume' });
  expect(consumer.calls[2]).toBe(`resume ${TOPIC}/0`);
  closes.get('wf-0')!();
  closes.get('wf-1')!(); // 3 free: not yet room for the old wait
  await tick();

  // B1: kafkajs refetches from 7 (a small fetch). Record 7 outlasts the slice, so B1 hands its turn back and is kept.
  const resolved: string[] = [];
  const b1 = internals.turns.run(consumer, payloadOf(0, [7, 8, 9], consumer, { size: 200, resolved }));
  await waitFor(() => gates.has(7), { timeoutMs: 1000, what: 'record 7 retried' });
  await sleep(100);
  gates.get(7)!.resolve();
  await b1;
  await waitFor(() => gates.has(8), { timeoutMs: 1000, what: 'record 8 taken from memory' });
  expect(consumer.calls.slice(3)).toEqual([`pause ${TOPIC}/0`]);

  // Four of B0's executions close: room for the old wait, whose callback resumes the partition.
  for (const id of ['wf-2', 'wf-3', 'wf-4', 'wf-5']) closes.get(id)!();
  await sleep(20);
  // Before the fix: `resume` while the kept batch still has 8 and 9 to do. waitForRoom's callback resumes with
  // the bare consumer, not kept.pausable(): kafkajs fetches partition 0 again from 8 (B1 resolved 7) beside B1.
  expect(consumer.calls.slice(3)).toEqual([`pause ${TOPIC}/0`]);

  gates.get(8)!.resolve();
  await waitFor(() => gates.has(9), { timeoutMs: 1000, what: 'record 9' });
  gates.get(9)!.resolve();
  await internals.turns.settled();
});

test('after kafkajs restarts a crashed consumer, the old run’s kept batch ending does not resume the partition a new kept batch holds', async () => {
  const gates = new Map<string, Deferred<void>>();
  let call = 0;
  handle.mockImplementation(async (_ctx, { message: m }, { onStarted } = {}) => {
    const key = `${++call}:${m.offset}`;
    if (call === 2) {
      // The old run's record 1: a slow start, still in flight across the crash and the restart.
      const d = deferred<void>();
      gates.set(key, d);
      await d.promise;
    }
    onStarted?.(`wf-${m.offset}`, 'run');
    return 'started';
  });
  const { consumer, internals } = boundAtTwo();

  // K1: records 0 and 1 take the tenant's 2 slots; at 2 it is kept, waiting for room, its partition paused.
  let running1 = true;
  await internals.turns.run(consumer, payloadOf(0, [0, 1, 2, 3], consumer, { running: () => running1 }));
  expect(consumer.calls).toEqual([`pause ${TOPIC}/0`]);

  // kafkajs crashes on a retriable error and restarts the same Consumer object: its new ConsumerGroup has no pause,
  // joins (GROUP_JOIN: K1's generation is over, its wait ends) and fetches partition 0 again from its committed 1.
  running1 = false;
  internals.onGroupJoin(consumer, { [TOPIC]: [0] });
  await tick();
  // K2 (the new run's batch) finds the tenant full too: kept, partition paused in the new ConsumerGroup.
  await internals.turns.run(consumer, payloadOf(0, [1, 2, 3], consumer));
  expect(consumer.calls).toEqual([`pause ${TOPIC}/0`, `pause ${TOPIC}/0`]);

  // K1's slow record finishes: K1 is done.
  gates.get('2:1')!.resolve();
  await sleep(20);
  // Before the fix: K1's done() resumes partition 0 (same consumer, membership.current() is true, `running` is
  // keyed by partition only and K1's letGo just deleted K2's key): kafkajs fetches it beside K2. A third batch then
  // registers the same admission key 'p0' as K2 and replaces K2's wake: K2 waits (bytes kept) until the next rejoin.
  expect(consumer.calls).toEqual([`pause ${TOPIC}/0`, `pause ${TOPIC}/0`]);
  internals.group.consumer = undefined; // what stopping the consumer does first: K2 ends too
  await internals.turns.settled();
});
