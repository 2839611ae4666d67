/**
 * How a batch's wait for room ends when it would be long (src/ingest/batchTurn.ts, keptBatches.ts): a kept batch
 * keeps nothing in memory for an operator's pause (contract §2, "Pausing a tenant"; it may last days) nor past
 * KEPT_WAIT_MS for a tenant whose dispatches stay open (its API down). The batch ends, commits what finished and
 * lets its fetched bytes go; its partition stays paused, and only room (the tenant resumed) fetches it again. A
 * batch that ends for a consumer replaced meanwhile leaves no wait behind. Real Kafka and Temporal: it_tenant_pause.
 */
import { TenantAdmission } from '../../src/ingest/admission';
import { KEPT_WAIT_MS } from '../../src/ingest/keptBatches';
import { handleRecord } from '../../src/ingest/startDispatch';
import { batchPayload } from '../support/batchPayload';
import { ingesterInternals, ingesterWithAdmission } from '../support/ingesterInternals';
import { waitFor } from '../support/wait';

jest.mock('../../src/ingest/startDispatch', () => ({ handleRecord: jest.fn() }));
const handle = handleRecord as jest.MockedFunction<typeof handleRecord>;

const TOPIC = 'poimen.acme.dispatch';
const tick = () => new Promise((r) => setImmediate(r));

function stubConsumer() {
  const calls: string[] = [];
  const commits: string[] = [];
  return {
    calls,
    commits,
    commit: (offset: string) => void commits.push(offset),
    pause: (t: { topic: string; partitions?: number[] }[]) =>
      calls.push(`pause ${t[0]!.topic}/${t[0]!.partitions}`),
    resume: (t: { topic: string; partitions?: number[] }[]) =>
      calls.push(`resume ${t[0]!.topic}/${t[0]!.partitions}`),
  };
}

/**
 * An ingester joined to acme's partitions 0 and 1 with a stub consumer, whose admission is told of the pauses in
 * `paused` and whose executions stay open until the test closes them (`closes`, by workflow id).
 */
function pausableIngester(bound: { tenantMaxOpen: number }, overrides: Partial<Record<string, number>>) {
  const paused = new Set<string>();
  const closes = new Map<string, () => void>();
  const admission = new TenantAdmission({
    maxOpen: 0,
    tenantMaxOpen: bound.tenantMaxOpen,
    watch: (id) => new Promise<void>((resolve) => closes.set(id, resolve)),
    paused: (t) => paused.has(t),
  });
  const internals = ingesterInternals(ingesterWithAdmission(admission, overrides));
  /** A new consumer joined to both partitions, as after a replacement. */
  const join = () => {
    const c = stubConsumer();
    internals.group.consumer = c;
    internals.onGroupJoin(c, { [TOPIC]: [0, 1] });
    return c;
  };
  const consumer = join();
  const run = (offsets: number[], o: { partition?: number; on?: typeof consumer } = {}) => {
    const c = o.on ?? consumer;
    const payload = batchPayload({ topic: TOPIC, partition: o.partition ?? 0, offsets, commit: c.commit });
    return internals.turns.run(c, payload);
  };
  const kept = () => internals.turns.kept.keptBytes;
  return { admission, consumer, internals, paused, closes, run, kept, join };
}

/** As startedOpen, but the record at `offset` starts only once the returned function is called. */
function startedOpenSlowAt(offset: string): () => void {
  let release!: () => void;
  const slow = new Promise<void>((r) => (release = r));
  handle.mockImplementation(async (_ctx, { message: m }, { onStarted } = {}) => {
    if (m.offset === offset) await slow;
    onStarted?.(`wf-${m.offset}`, 'run');
    return 'started';
  });
  return () => release();
}

/** Each record's execution starts and stays open until the test closes it. */
const startedOpen = () =>
  handle.mockImplementation(async (_ctx, { message: m }, { onStarted } = {}) => {
    onStarted?.(`wf-${m.offset}`, 'run');
    return 'started';
  });

const made: TenantAdmission[] = [];
afterEach(() => {
  for (const a of made.splice(0)) a.close();
});
beforeEach(() => handle.mockReset());

test("a tenant paused while its batch waits for room in memory: the batch ends and lets its bytes go, and its partition waits for the tenant's resume", async () => {
  startedOpen();
  const t = pausableIngester({ tenantMaxOpen: 2 }, { maxInFlight: 8, commitEveryRecords: 1 });
  made.push(t.admission);
  await t.run([0, 1, 2, 3, 4]);
  // Two open, the third waits for room from memory.
  expect(handle).toHaveBeenCalledTimes(2);
  expect(t.consumer.calls).toEqual([`pause ${TOPIC}/0`]);
  expect(t.kept()).toBeGreaterThan(0);

  t.paused.add('acme');
  t.admission.wakeAll(); // what the pause follower does on a pause record
  await waitFor(() => t.kept() === 0, {
    timeoutMs: 2000,
    what: "the paused tenant's batch letting its bytes go",
  });
  await t.internals.turns.settled();
  expect(handle).toHaveBeenCalledTimes(2);
  expect(t.consumer.commits.at(-1)).toBe('2');
  // Closes during the pause free slots but fetch nothing: the partition stays paused.
  t.closes.get('wf-0')!();
  await tick();
  t.admission.wakeAll();
  expect(t.consumer.calls.filter((c) => c.startsWith('resume'))).toEqual([]);

  // Resumed, with room: the partition is fetched again from record 2.
  t.paused.delete('acme');
  t.admission.wakeAll();
  expect(t.consumer.calls.at(-1)).toBe(`resume ${TOPIC}/0`);
});

test('a tenant paused while its batch goes on from memory after its turn: the batch takes no further record, and its end leaves the partition paused until the resume', async () => {
  let release21!: () => void;
  handle.mockImplementation(async (_ctx, { message: m }) => {
    if (m.offset === '21') await new Promise<void>((r) => (release21 = r));
    return 'started';
  });
  // No bound: only the pause holds the tenant; one record in flight and a short turn.
  const t = pausableIngester(
    { tenantMaxOpen: 0 },
    { maxInFlight: 1, batchSliceMs: 300, commitEveryRecords: 1 },
  );
  made.push(t.admission);
  const running = t.run([20, 21, 22, 23]);
  await waitFor(() => handle.mock.calls.length === 2, { timeoutMs: 1000, what: 'record 21 to be taken' });
  await new Promise((r) => setTimeout(r, 400)); // the turn ends while 21 is in flight
  t.paused.add('acme');
  release21();
  await running; // handed back: the batch goes on from memory, its partition paused
  await t.internals.turns.settled();
  expect(handle).toHaveBeenCalledTimes(2);
  expect(t.consumer.commits.at(-1)).toBe('22');
  expect(t.kept()).toBe(0);
  expect(t.consumer.calls.filter((c) => c.startsWith('resume'))).toEqual([]);

  t.paused.delete('acme');
  t.admission.wakeAll();
  expect(t.consumer.calls.at(-1)).toBe(`resume ${TOPIC}/0`);
});

test('a tenant whose dispatches stay open (its API down): after KEPT_WAIT_MS without room its kept batch lets its fetch go and waits in Kafka', async () => {
  startedOpen();
  const t = pausableIngester({ tenantMaxOpen: 1 }, { maxInFlight: 8, commitEveryRecords: 1 });
  made.push(t.admission);
  jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'performance', 'queueMicrotask'] });
  try {
    await t.run([0, 1, 2]);
    expect(handle).toHaveBeenCalledTimes(1);
    expect(t.kept()).toBeGreaterThan(0);
    jest.advanceTimersByTime(KEPT_WAIT_MS - 1);
    await tick();
    expect(t.kept()).toBeGreaterThan(0); // a wait of a few dispatches' time stays kept
    jest.advanceTimersByTime(1);
  } finally {
    jest.useRealTimers();
  }
  await t.internals.turns.settled();
  expect(t.kept()).toBe(0);
  expect(handle).toHaveBeenCalledTimes(1);
  expect(t.consumer.commits.at(-1)).toBe('1');
  expect(t.consumer.calls).toEqual([`pause ${TOPIC}/0`, `pause ${TOPIC}/0`]);
  // Its dispatch closes: the partition is fetched again, from record 1.
  t.closes.get('wf-0')!();
  await tick();
  expect(t.consumer.calls.at(-1)).toBe(`resume ${TOPIC}/0`);
});

test('a batch that ends waiting for room after its consumer was replaced leaves no wait behind: the next consumer’s partition gets the room', async () => {
  const releaseFirst = startedOpenSlowAt('0');
  // Nothing can be kept (two fetches of 10 bytes): a batch without room ends and waits in Kafka.
  const t = pausableIngester(
    { tenantMaxOpen: 1 },
    { maxInFlight: 8, commitEveryRecords: 1, fetchMaxBytes: 10 },
  );
  made.push(t.admission);
  // Record 0 takes acme's one slot and is slow; record 1 finds no room: the batch ends once record 0 is done.
  const ending = t.run([0, 1]);
  await tick();
  // The consumer is replaced meanwhile (a topic change): what stopping it does first, then its batches finish.
  t.internals.group.consumer = undefined;
  t.admission.forgetWaiters();
  const settled = t.internals.turns.settled();
  releaseFirst();
  await ending;
  await settled;

  // The next consumer's partition 1 finds the tenant full (wf-0 open) and waits for room; wf-0's close is its turn.
  const next = t.join();
  await t.run([5, 6], { partition: 1, on: next });
  expect(next.calls).toEqual([`pause ${TOPIC}/1`]);
  t.closes.get('wf-0')!();
  await tick();
  expect(next.calls).toEqual([`pause ${TOPIC}/1`, `resume ${TOPIC}/1`]);
});

/** Acme at 2 open: records 0 and 1 (slow until `releaseSlow`) take its slots, record 2 waits kept in memory. */
async function keptBehindSlowRecord() {
  const releaseSlow = startedOpenSlowAt('1');
  const t = pausableIngester({ tenantMaxOpen: 2 }, { maxInFlight: 8, commitEveryRecords: 1 });
  made.push(t.admission);
  await t.run([0, 1, 2, 3]);
  expect(t.consumer.calls).toEqual([`pause ${TOPIC}/0`]);
  return { t, releaseSlow };
}

test("a kept batch whose wait a rejoin ended, its tenant then paused: the batch's end leaves the partition paused", async () => {
  const { t, releaseSlow } = await keptBehindSlowRecord();
  // A rebalance (the same assignment back) ends the wait while record 1 is in flight; then the operator pauses.
  t.internals.onGroupJoin(t.consumer, { [TOPIC]: [0, 1] });
  await tick();
  t.paused.add('acme');
  t.admission.wakeAll();
  releaseSlow();
  await t.internals.turns.settled();
  expect(t.kept()).toBe(0);
  expect(t.consumer.calls.filter((c) => c.startsWith('resume'))).toEqual([]);
  // Resumed, with room: the partition is fetched again.
  t.paused.delete('acme');
  t.closes.get('wf-0')?.();
  await tick();
  t.admission.wakeAll();
  expect(t.consumer.calls.at(-1)).toBe(`resume ${TOPIC}/0`);
});

test('after kafkajs restarts the consumer, a batch that finds its tenant paused pauses its partition while the earlier run’s kept batch still finishes', async () => {
  const { t, releaseSlow } = await keptBehindSlowRecord();
  // kafkajs restarts the same consumer (its pauses forgotten) and rejoins: the kept batch's wait ends, record 1 in
  // flight; then the operator pauses acme.
  t.internals.paused.consumerRestarted();
  t.internals.onGroupJoin(t.consumer, { [TOPIC]: [0, 1] });
  await tick();
  t.paused.add('acme');
  t.admission.wakeAll();
  t.consumer.calls.length = 0;
  // Run 2 fetches partition 0 again from its committed offset: its rest waits in Kafka for the resume, paused now,
  // not fetched again at fetch speed until run 1's batch ends.
  await t.run([1, 2, 3]);
  expect(t.consumer.calls).toEqual([`pause ${TOPIC}/0`]);
  releaseSlow();
  await t.internals.turns.settled();
  expect(t.consumer.calls.filter((c) => c.startsWith('resume'))).toEqual([]);
});
