/* eslint-disable max-lines -- the ingester's batch cases share one fake consumer set-up */
/**
 * The ingester's batch bookkeeping at unit level: which offsets it commits and resolves, and which partitions it
 * pauses and resumes, when records, commits and failures interleave in orders the integration suites cannot
 * force. The consumer is a recording stub; `handleRecord` (the Temporal start) is replaced by deferreds the test
 * resolves one by one. Real Kafka and Temporal are exercised by it_ingest_production.
 */
import { KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } from 'kafkajs';
import { loadRelayConfig } from '../../src/config';
import { TenantAdmission } from '../../src/ingest/admission';
import { Ingester } from '../../src/ingest/ingester';
import { handleRecord } from '../../src/ingest/startDispatch';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';
import { waitFor } from '../support/wait';
import { batchPayload as batchStub } from '../support/batchPayload';
import { ingesterInternals, ingesterWithAdmission, neverClosing } from '../support/ingesterInternals';

jest.mock('../../src/ingest/startDispatch', () => ({ handleRecord: jest.fn() }));
const handle = handleRecord as jest.MockedFunction<typeof handleRecord>;

interface Deferred<T> {
  promise: Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
}
function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}
const tick = () => new Promise((r) => setImmediate(r));

/** A kafkajs protocol error as the broker's answer becomes one (type and code from the Kafka protocol). */
function protocolError(type: string, code: number, message: string, retriable: boolean): Error {
  return new KafkaJSProtocolError({ message, type, code, retriable } as unknown as Error);
}

function stubConsumer() {
  const commits: { offset: string; done: Deferred<void> }[] = [];
  const calls: string[] = [];
  const stub = {
    commits,
    calls,
    /** While true, each commit stays in flight until the test resolves it. */
    hold: true,
    commitOffsets: jest.fn((offsets: { offset: string }[]) => {
      const done = deferred<void>();
      commits.push({ offset: offsets[0]!.offset, done });
      if (!stub.hold) done.resolve();
      return done.promise;
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

/**
 * An ingester on the stub consumer. Its batches' turn is longer than any case takes unless a case sets
 * `batchSliceMs`: the default (100 ms) of wall-clock time would end a turn midway on a slow machine.
 */
function ingester(overrides: Partial<Record<string, number>> = {}) {
  const cfg = loadRelayConfig('ingester', {});
  const metrics = createMetrics({ defaultMetrics: false });
  const kafka = { admin: () => ({}) } as never;
  const ing = new Ingester(
    {
      ...cfg,
      ingest: { ...cfg.ingest, maxInFlight: 2, commitEveryRecords: 1, batchSliceMs: 600_000, ...overrides },
    },
    kafka,
    {} as never,
    metrics,
    createLogger('test', 'silent'),
  );
  return { ing, metrics };
}

/** A batch as kafkajs hands it over; its one-attempt commit goes to the stub consumer's recorder. */
function batchPayload(
  topic: string,
  partition: number,
  offsets: number[],
  consumer: { commitOffsets(o: { offset: string }[]): Promise<void> },
  /** The last offset fetched, when records kafkajs filtered out (transaction markers) follow the last one. */
  lastFetched: number = offsets.at(-1)!,
) {
  const resolved: string[] = [];
  const payload = batchStub({
    topic,
    partition,
    offsets,
    lastFetched,
    commit: (offset) => consumer.commitOffsets([{ offset }]),
    resolve: (o) => resolved.push(o),
  });
  return { payload, resolved };
}

beforeEach(() => handle.mockReset());

test('records that complete while a commit is in flight are committed by the batch’s last commit', async () => {
  const starts = [deferred<'started'>(), deferred<'started'>(), deferred<'started'>()];
  handle.mockImplementation((_ctx, { message: m }) => starts[Number(m.offset) - 10]!.promise);
  const { ing } = ingester();
  const consumer = stubConsumer();
  ingesterInternals(ing).group.consumer = consumer;
  const { payload } = batchPayload('poimen.acme.dispatch', 0, [10, 11, 12], consumer);
  const run = ingesterInternals(ing).turns.run(consumer, payload);

  await tick();
  starts[0]!.resolve('started'); // frees a slot: record 12 is taken and a commit of offset 11 goes out
  await tick();
  await tick();
  expect(consumer.commits.map((c) => c.offset)).toEqual(['11']);
  starts[1]!.resolve('started'); // both finish while that commit is still in flight
  starts[2]!.resolve('started');
  await tick();
  consumer.hold = false;
  consumer.commits[0]!.done.resolve();
  await run;
  // The batch ends committed at its last record + 1: no tail left for a rebalance to redeliver.
  expect(consumer.commits.at(-1)!.offset).toBe('13');
});

test('a batch whose last records were filtered out (a transaction marker, an aborted transaction) commits past them once every record finished, and not before', async () => {
  const starts = [deferred<'started'>(), deferred<'started'>()];
  handle.mockImplementation((_ctx, { message: m }) => starts[Number(m.offset) - 20]!.promise);
  const { ing } = ingester();
  const consumer = stubConsumer();
  consumer.hold = false;
  ingesterInternals(ing).group.consumer = consumer;
  // Records 20 and 21, then 22 (the transaction's commit marker) and 23-25 (an aborted transaction with its marker).
  const { payload } = batchPayload('poimen.acme.dispatch', 0, [20, 21], consumer, 25);
  const run = ingesterInternals(ing).turns.run(consumer, payload);
  await tick();
  starts[0]!.resolve('started');
  await tick();
  await tick();
  // Record 21 is not finished: the commit stops right after 20.
  expect(consumer.commits.map((c) => c.offset)).toEqual(['21']);
  starts[1]!.resolve('started');
  await run;
  expect(consumer.commits.map((c) => c.offset)).toEqual(['21', '26']);
});

test('a batch ended by a failure before its last record does not commit past the filtered records after it', async () => {
  handle.mockImplementation(async (_ctx, { message: m }) => {
    if (m.offset === '31') throw new Error('Temporal unreachable');
    return 'started';
  });
  const { ing } = ingester({ maxInFlight: 1 });
  const consumer = stubConsumer();
  consumer.hold = false;
  ingesterInternals(ing).group.consumer = consumer;
  const { payload } = batchPayload('poimen.acme.dispatch', 0, [30, 31], consumer, 33);
  await ingesterInternals(ing).turns.run(consumer, payload);
  expect(consumer.commits.map((c) => c.offset)).toEqual(['31']);
});

test('a failure pauses only its own partition, ends its batch at once, and its record’s success on the refetch ends the outage', async () => {
  let failA = true;
  handle.mockImplementation(async (_ctx, { topic }) => {
    if (topic === 'poimen.a.dispatch' && failA) throw new Error('Temporal unreachable');
    return 'started';
  });
  const { ing, metrics } = ingester({ maxInFlight: 8 });
  const consumer = stubConsumer();
  consumer.hold = false;
  ingesterInternals(ing).group.consumer = consumer;
  const turns = ingesterInternals(ing).turns;
  const each = turns.run.bind(turns);
  const gauge = async () =>
    (await metrics.pausedPartitions.get()).values.find((v) => v.labels.topic === 'poimen.a.dispatch')?.value;

  const a = batchPayload('poimen.a.dispatch', 0, [0, 1], consumer);
  const b = batchPayload('poimen.b.dispatch', 3, [0], consumer);
  // The failing batch returns instead of waiting out the outage, so it holds up no other partition's fetch.
  await Promise.all([each(consumer, a.payload), each(consumer, b.payload)]);
  expect(a.resolved).toEqual([]);
  expect(b.resolved).toEqual(['0']);
  expect(consumer.commits.map((c) => c.offset)).toEqual(['1']);
  expect(consumer.calls).toEqual(['pause poimen.a.dispatch/0']);
  expect(ing.ready()).toBe(false);
  expect(ing.readinessDetail()).toMatch(
    /paused: 1 partition\(s\); oldest poimen\.a\.dispatch\/0 .*Temporal unreachable/,
  );
  expect(await gauge()).toBe(1);

  // After the backoff the partition is resumed, and kafkajs fetches the unresolved records again.
  await waitFor(() => consumer.calls.includes('resume poimen.a.dispatch/0'), {
    timeoutMs: 5000,
    intervalMs: 10,
  });
  expect(await gauge()).toBe(1);
  failA = false;
  await each(consumer, batchPayload('poimen.a.dispatch', 0, [0, 1], consumer).payload);
  expect(await gauge()).toBe(0);
  expect(ing.ready()).toBe(true);
  // b's record, then a's two as each finished (a commit per record here: commitEveryRecords 1).
  expect(consumer.commits.map((c) => c.offset)).toEqual(['1', '1', '2']);
});

test('stopping the consumer lets the batch in progress commit what it started before it disconnects', async () => {
  // A commit sent once disconnect() has begun is a commit lost (kafkajs closes the coordinator's connection).
  const start = deferred<'started'>();
  handle.mockImplementation(() => start.promise);
  const { ing } = ingester({ maxInFlight: 8 });
  const consumer = stubConsumer();
  consumer.hold = false;
  const events: string[] = [];
  consumer.commitOffsets.mockImplementation(async (o: { offset: string }[]) => {
    events.push(`commit ${o[0]!.offset}`);
  });
  const internals = ingesterInternals(ing);
  internals.group.consumer = Object.assign(consumer, {
    disconnect: async () => void events.push('disconnect'),
  });
  const batch = batchPayload('poimen.acme.dispatch', 0, [0, 1, 2], consumer);
  const running = internals.turns.run(consumer, batch.payload);
  await tick();
  const stopping = internals.stopConsumer();
  start.resolve('started');
  await stopping;
  await running;
  // Every commit before the disconnect, the last covering the batch's end (a commit per record here).
  expect(events.at(-1)).toBe('disconnect');
  expect(events.filter((e) => e !== 'disconnect').at(-1)).toBe('commit 3');
  expect(events.indexOf('disconnect')).toBe(events.length - 1);
});

test('a commit answered "not the coordinator" ends the generation: no further record is taken, no commit repeated, and the answer goes back to kafkajs so that it rejoins', async () => {
  // The group's coordinator moved to another broker. Every commit to the old one fails the same way, and
  // kafkajs sends them there until its consumer rejoins, which it does when a batch handler throws this.
  const notCoordinator = protocolError(
    'NOT_COORDINATOR_FOR_GROUP',
    16,
    'This is not the correct coordinator for this group',
    true,
  );
  handle.mockImplementation(async () => 'started');
  const { ing } = ingester({ maxInFlight: 1, commitEveryRecords: 1 });
  const consumer = stubConsumer();
  consumer.commitOffsets.mockImplementation(async () => {
    throw new KafkaJSNumberOfRetriesExceeded(notCoordinator, { retryCount: 10, retryTime: 30_000 });
  });
  const internals = ingesterInternals(ing);
  internals.group.consumer = consumer;
  internals.group.joined = true;
  const offsets = Array.from({ length: 50 }, (_, i) => i);
  const { payload } = batchPayload('poimen.acme.dispatch', 0, offsets, consumer);

  const thrown = await internals.turns.run(consumer, payload).then(
    () => undefined,
    (e: unknown) => e as { type?: string },
  );
  expect(thrown?.type).toBe('NOT_COORDINATOR_FOR_GROUP');
  // The batch stopped within a few records of the answer instead of working through all fifty outside the group.
  expect(handle.mock.calls.length).toBeLessThanOrEqual(3);
  expect(consumer.commitOffsets).toHaveBeenCalledTimes(1);
  expect(ing.ready()).toBe(false);
  expect(ing.readinessDetail()).toMatch(/rejoining consumer group/);
});

test('a heartbeat answered "rebalancing" stops the batch taking records and hands the answer back to kafkajs, after committing what finished: the coordinator accepts commits of the current generation until the rebalance completes', async () => {
  jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick'] });
  try {
    const rebalancing = protocolError(
      'REBALANCE_IN_PROGRESS',
      27,
      'The group is rebalancing, so a rejoin is needed',
      false,
    );
    const starts: Deferred<'started'>[] = [];
    handle.mockImplementation(() => {
      const d = deferred<'started'>();
      starts.push(d);
      return d.promise;
    });
    const { ing } = ingester({ maxInFlight: 1, commitEveryRecords: 1000 });
    const consumer = stubConsumer();
    consumer.hold = false;
    ingesterInternals(ing).group.consumer = consumer;
    const { payload } = batchPayload('poimen.acme.dispatch', 0, [0, 1, 2, 3, 4, 5], consumer);
    (payload as { heartbeat: () => Promise<void> }).heartbeat = async () => {
      throw rebalancing;
    };
    const run = ingesterInternals(ing)
      .turns.run(consumer, payload)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    await tick();
    starts[0]!.resolve('started');
    await tick();
    await tick();
    expect(starts).toHaveLength(2);
    // The in-batch heartbeat (every 3 s) hears that the group is rebalancing while record 1 is in flight.
    await jest.advanceTimersByTimeAsync(3000);
    starts[1]!.resolve('started');
    expect(await run).toBe(rebalancing);
    // Nothing after record 1 was started, so the group is not held up until the batch is through; records 0 and 1
    // are committed before the rejoin, so the partition's next owner does not get them again.
    expect(starts).toHaveLength(2);
    expect(consumer.commits.map((c) => c.offset)).toEqual(['2']);
  } finally {
    jest.useRealTimers();
  }
});

test('a commit answered "rebalancing" ends the generation: the group has completed its join phase without this batch, so nothing more is committed', async () => {
  // The coordinator answers a commit REBALANCE_IN_PROGRESS only in CompletingRebalance, when it takes none of it.
  const rebalancing = protocolError(
    'REBALANCE_IN_PROGRESS',
    27,
    'The group is rebalancing, so a rejoin is needed',
    false,
  );
  handle.mockImplementation(async () => 'started');
  const { ing } = ingester({ maxInFlight: 1, commitEveryRecords: 1 });
  const consumer = stubConsumer();
  consumer.commitOffsets.mockImplementation(async () => {
    throw rebalancing;
  });
  ingesterInternals(ing).group.consumer = consumer;
  const { payload } = batchPayload('poimen.acme.dispatch', 0, [0, 1, 2, 3, 4, 5], consumer);
  const thrown = await ingesterInternals(ing)
    .turns.run(consumer, payload)
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(thrown).toBe(rebalancing);
  expect(handle.mock.calls.length).toBeLessThanOrEqual(3);
  expect(consumer.commitOffsets).toHaveBeenCalledTimes(1);
});

test('a failed commit is not repeated at every record: the next one goes some records on, and covers it', async () => {
  handle.mockImplementation(async () => 'started');
  const { ing } = ingester({ maxInFlight: 1, commitEveryRecords: 3 });
  const consumer = stubConsumer();
  let calls = 0;
  consumer.commitOffsets.mockImplementation(async (o: { offset: string }[]) => {
    consumer.commits.push({ offset: o[0]!.offset, done: deferred<void>() });
    // The coordinator is away for the first three: connection refused, not an answer about the group.
    if (++calls <= 3)
      throw Object.assign(new Error('Connection error: connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  });
  ingesterInternals(ing).group.consumer = consumer;
  const offsets = Array.from({ length: 12 }, (_, i) => i);
  const { payload } = batchPayload('poimen.acme.dispatch', 0, offsets, consumer);
  await ingesterInternals(ing).turns.run(consumer, payload);
  expect(consumer.commits.map((c) => c.offset)).toEqual(['3', '6', '9', '12']);
});

test('the batch’s last commit is retried while its generation lasts, and no more once the group rebalances', async () => {
  jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick'] });
  try {
    const rebalancing = protocolError(
      'REBALANCE_IN_PROGRESS',
      27,
      'The group is rebalancing, so a rejoin is needed',
      false,
    );
    handle.mockImplementation(async () => 'started');
    const { ing } = ingester({ maxInFlight: 1, commitEveryRecords: 1000 });
    const consumer = stubConsumer();
    const sentAt: number[] = [];
    consumer.commitOffsets.mockImplementation(async () => {
      sentAt.push(Date.now());
      throw Object.assign(new Error('Connection error: connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    });
    ingesterInternals(ing).group.consumer = consumer;
    const { payload } = batchPayload('poimen.acme.dispatch', 0, [0, 1], consumer);
    // The in-batch heartbeat (every 3 s) learns that the group is rebalancing.
    (payload as { heartbeat: () => Promise<void> }).heartbeat = async () => {
      throw rebalancing;
    };
    const t0 = Date.now();
    const run = ingesterInternals(ing)
      .turns.run(consumer, payload)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    await jest.advanceTimersByTimeAsync(60_000);
    expect(await run).toBe(rebalancing);
    // Attempts at 0, 0.3, 0.9 and 2.1 s; the rebalance began at 3 s: the member rejoins instead of retrying.
    expect(sentAt.map((t) => t - t0)).toEqual([0, 300, 900, 2100]);
  } finally {
    jest.useRealTimers();
  }
});

test('kafkajs joins a newer generation by itself mid-batch (a stale-metadata fetch elsewhere): the batch takes no further record, resolves and commits nothing more, and hands nothing back', async () => {
  const starts: Deferred<'started'>[] = [];
  handle.mockImplementation(() => {
    const d = deferred<'started'>();
    starts.push(d);
    return d.promise;
  });
  const { ing } = ingester({ maxInFlight: 1, commitEveryRecords: 1 });
  const consumer = stubConsumer();
  consumer.hold = false;
  const internals = ingesterInternals(ing);
  internals.group.consumer = consumer;
  const { payload, resolved } = batchPayload('poimen.acme.dispatch', 0, [0, 1, 2, 3], consumer);
  const run = internals.turns.run(consumer, payload);
  await tick();
  starts[0]!.resolve('started');
  await tick();
  await tick();
  expect(resolved).toEqual(['0']);
  expect(consumer.commits.map((c) => c.offset)).toEqual(['1']);
  // Record 1 is in flight when kafkajs reports the join of a newer generation.
  internals.onGroupJoin(consumer, { 'poimen.acme.dispatch': [1] });
  starts[1]!.resolve('started');
  await expect(run).resolves.toBeUndefined();
  expect(starts).toHaveLength(2);
  expect(resolved).toEqual(['0']);
  expect(consumer.commits.map((c) => c.offset)).toEqual(['1']);
});

test('a last commit that keeps failing past its budget hands the uncommitted records back: kafkajs fetches them again, so the tail is not left uncommitted', async () => {
  jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick'] });
  try {
    handle.mockImplementation(async () => 'started');
    const { ing } = ingester({ maxInFlight: 1, commitEveryRecords: 1000 });
    const consumer = stubConsumer();
    consumer.commitOffsets.mockImplementation(async () => {
      throw Object.assign(new Error('The coordinator is loading'), { type: 'COORDINATOR_LOAD_IN_PROGRESS' });
    });
    ingesterInternals(ing).group.consumer = consumer;
    const { payload, resolved } = batchPayload('poimen.acme.dispatch', 0, [5, 6, 7], consumer);
    const run = ingesterInternals(ing).turns.run(consumer, payload);
    await jest.advanceTimersByTimeAsync(120_000);
    await expect(run).resolves.toBeUndefined();
    // Resolved as the records finished, then back to before the first: the next fetch starts at offset 5.
    expect(resolved.at(-1)).toBe('4');
    expect(resolved.slice(0, -1)).toEqual(['5', '6', '7']);
    expect(consumer.commitOffsets.mock.calls.length).toBeGreaterThan(3);
  } finally {
    jest.useRealTimers();
  }
});

/**
 * Records 20–23 one at a time (one in flight) with a 300 ms slice that ends while record 21 is in flight; returns
 * once the handler has settled, with records 22 and 23 not yet started.
 */
async function sliceEndsAt21(overrides: Partial<Record<string, number>> = {}) {
  const starts = [deferred<'started'>(), deferred<'started'>(), deferred<'started'>(), deferred<'started'>()];
  handle.mockImplementation((_ctx, { message: m }) => starts[Number(m.offset) - 20]!.promise);
  const { ing, metrics } = ingester({ batchSliceMs: 300, maxInFlight: 1, ...overrides });
  const consumer = stubConsumer();
  consumer.hold = false;
  ingesterInternals(ing).group.consumer = consumer;
  const { payload, resolved } = batchPayload('poimen.acme.dispatch', 0, [20, 21, 22, 23], consumer);
  const run = ingesterInternals(ing).turns.run(consumer, payload);
  await tick();
  starts[0]!.resolve('started'); // record 21 is taken at once: the slice has not ended
  await waitFor(() => handle.mock.calls.length === 2, { timeoutMs: 1000, what: 'record 21 to be taken' });
  await new Promise((r) => setTimeout(r, 400)); // the turn ends while 21 is in flight
  starts[1]!.resolve('started');
  await run;
  return { starts, ing, metrics, consumer, resolved };
}

test('a long batch hands its turn back after the slice and goes on from memory: its partition paused until it is done, then fetched again from past it', async () => {
  const { starts, ing, metrics, consumer, resolved } = await sliceEndsAt21();
  // kafkajs has its turn back with 22 and 23 not finished: the partition stays paused, its bytes kept.
  expect(consumer.calls).toEqual(['pause poimen.acme.dispatch/0']);
  expect(resolved.at(-1)).toBe('21');
  expect((await metrics.keptFetchBytes.get()).values[0]!.value).toBeGreaterThan(0);
  await waitFor(() => handle.mock.calls.length === 3, {
    timeoutMs: 1000,
    what: 'record 22 taken from memory',
  });
  starts[2]!.resolve('started');
  await waitFor(() => handle.mock.calls.length === 4, {
    timeoutMs: 1000,
    what: 'record 23 taken from memory',
  });
  starts[3]!.resolve('started');
  await ingesterInternals(ing).turns.settled();
  // Every record decoded once; the next fetch starts past the batch, and nothing stays kept.
  expect(consumer.calls).toEqual(['pause poimen.acme.dispatch/0', 'resume poimen.acme.dispatch/0']);
  expect(resolved.at(-1)).toBe('23');
  expect(consumer.commits.at(-1)!.offset).toBe('24');
  expect((await metrics.keptFetchBytes.get()).values[0]!.value).toBe(0);
});

test('a long batch whose bytes would pass what may be kept ends its turn as before: it commits what finished and returns, and kafkajs fetches its rest again', async () => {
  // Two fetches' worth of 1 byte: nothing fits.
  const { consumer, resolved } = await sliceEndsAt21({ fetchMaxBytes: 1 });
  // Two records of four: the batch returned with 22 and 23 unresolved, so the next fetch starts at 22.
  expect(handle).toHaveBeenCalledTimes(2);
  expect(resolved.at(-1)).toBe('21');
  expect(consumer.commits.at(-1)!.offset).toBe('22');
  expect(consumer.calls).toEqual([]);
});

test('within its slice a batch whose records start at once runs to its end', async () => {
  handle.mockResolvedValue('started');
  const { ing } = ingester();
  const consumer = stubConsumer();
  consumer.hold = false;
  ingesterInternals(ing).group.consumer = consumer;
  const offsets = Array.from({ length: 50 }, (_, i) => 100 + i);
  const { payload, resolved } = batchPayload('poimen.acme.dispatch', 0, offsets, consumer);
  await ingesterInternals(ing).turns.run(consumer, payload);
  expect(handle).toHaveBeenCalledTimes(50);
  expect(resolved.at(-1)).toBe('149');
});

test('a turn is never handed back before the batch has taken a full in-flight bound of records, however short the slice', async () => {
  handle.mockImplementation(() => new Promise((r) => setTimeout(() => r('started'), 30)));
  const { ing } = ingester({ batchSliceMs: 10, maxInFlight: 3 });
  const consumer = stubConsumer();
  consumer.hold = false;
  ingesterInternals(ing).group.consumer = consumer;
  const offsets = Array.from({ length: 10 }, (_, i) => 200 + i);
  const { payload, resolved } = batchPayload('poimen.acme.dispatch', 0, offsets, consumer);
  await ingesterInternals(ing).turns.run(consumer, payload);
  // Three taken at once (the bound), all slower than the slice: the turn is handed back at the fourth, which the
  // batch goes on with from memory.
  expect(handle).toHaveBeenCalledTimes(4);
  expect(consumer.calls).toEqual(['pause poimen.acme.dispatch/0']);
  await ingesterInternals(ing).turns.settled();
  expect(handle).toHaveBeenCalledTimes(10);
  expect(resolved.at(-1)).toBe('209');
  expect(consumer.calls).toEqual(['pause poimen.acme.dispatch/0', 'resume poimen.acme.dispatch/0']);
});

test('a record whose wait for room outlasted its batch (a failure meanwhile) gives its tenant slot back', async () => {
  const starts = [deferred<'started' | 'duplicate'>(), deferred<'started' | 'duplicate'>()];
  handle.mockImplementation((_ctx, { message: m }) => starts[Number(m.offset) - 10]!.promise);
  // Three open per tenant; nothing started here stays open (no execution is watched).
  const admission = neverClosing(3);
  const ing = ingesterWithAdmission(admission, { maxInFlight: 2, commitEveryRecords: 1 });
  const consumer = stubConsumer();
  consumer.hold = false;
  ingesterInternals(ing).group.consumer = consumer;
  const { payload } = batchPayload('poimen.acme.dispatch', 0, [10, 11, 12], consumer);
  const run = ingesterInternals(ing).turns.run(consumer, payload);
  await tick();
  // Record 12 took its slot and waits for room in flight; record 10 fails meanwhile, which ends the batch.
  expect(handle).toHaveBeenCalledTimes(2);
  starts[0]!.reject(new Error('Temporal unreachable'));
  await tick();
  starts[1]!.resolve('duplicate');
  await run;
  expect(handle).toHaveBeenCalledTimes(2);
  // Every slot came back: the tenant can take its whole bound again.
  expect([1, 2, 3, 4].map(() => admission.take('acme'))).toEqual([true, true, true, false]);
});

test('shipped defaults: a lone tenant keeps 254 open and waits in Kafka; a newcomer starts at once', async () => {
  // Each started record's execution stays open until the test closes it.
  const closes = new Map<string, () => void>();
  handle.mockImplementation(async (_ctx, { tenant, message: m }, { onStarted } = {}) => {
    onStarted?.(`wf-${tenant}-${m.offset}`, 'run');
    return 'started';
  });
  const cfg = loadRelayConfig('ingester', {});
  const admission = new TenantAdmission({
    maxOpen: cfg.ingest.maxOpen,
    tenantMaxOpen: cfg.ingest.tenantMaxOpen,
    watch: (workflowId) => new Promise<void>((resolve) => closes.set(workflowId, resolve)),
  });
  // Admission as shipped; only the batch's turn is made long, so that a slow machine taking over 500 ms for the
  // 254 starts does not end the turn early (the turn is ingesterBatch's other cases' concern).
  const ing = ingesterWithAdmission(admission, { batchSliceMs: 600_000 }, cfg);
  const consumer = stubConsumer();
  consumer.hold = false;
  ingesterInternals(ing).group.consumer = consumer;
  const eachBatch = (topic: string, offsets: number[]) =>
    ingesterInternals(ing).turns.run(consumer, batchPayload(topic, 0, offsets, consumer).payload);

  expect(cfg.ingest.maxOpen).toBe(256);
  await eachBatch(
    'poimen.acme.dispatch',
    Array.from({ length: 300 }, (_, i) => i),
  );
  // The whole ingester but the 2 slots kept for a newcomer; the rest waits, uncommitted, its partition paused.
  expect(handle).toHaveBeenCalledTimes(254);
  expect(consumer.calls).toEqual(['pause poimen.acme.dispatch/0']);
  // What finished is committed while the batch waits, not only every 200 records.
  await waitFor(() => consumer.commits.at(-1)?.offset === '254', { what: 'the finished 254 committed' });

  // A newcomer starts at once, in the slots kept for it (its first share is the floor, one open).
  await eachBatch('poimen.beta.dispatch', [0]);
  expect(handle).toHaveBeenCalledTimes(255);

  // A's executions close: its batch goes on from memory with no other wait than the closes, no fetch.
  const closeAcme = () => {
    for (const [id, close] of closes) if (id.startsWith('wf-acme-')) close();
  };
  closeAcme();
  await waitFor(() => handle.mock.calls.length > 255, { what: "acme's batch going on" });
  expect(consumer.calls).toEqual(['pause poimen.acme.dispatch/0']);
  // Once it is done, its partition is fetched again, from past the batch.
  await waitFor(
    () => {
      closeAcme();
      return consumer.calls.includes('resume poimen.acme.dispatch/0');
    },
    { what: "acme's partition resumed" },
  );
  expect(handle).toHaveBeenCalledTimes(301);
  expect(consumer.commits.at(-1)!.offset).toBe('300');
  admission.close();
});

/** Acme's batch of `offsets` handed to a fresh ingester whose tenants may keep `bound` open that never close. */
async function waitingForRoom(bound: number, offsets: number[], overrides: Partial<Record<string, number>>) {
  const admission = neverClosing(bound);
  const consumer = stubConsumer();
  consumer.hold = false;
  const internals = ingesterInternals(ingesterWithAdmission(admission, overrides));
  internals.group.consumer = consumer;
  await internals.turns.run(consumer, batchPayload('poimen.acme.dispatch', 0, offsets, consumer).payload);
  return { admission, consumer, internals };
}

test('a record of a batch waiting for room fails: the wait ends, and the outage’s resume waits for the batch’s end', async () => {
  const starts = new Map<number, Deferred<'started'>>();
  handle.mockImplementation(async (_ctx, { message: m }, { onStarted } = {}) => {
    const d = deferred<'started'>();
    starts.set(Number(m.offset), d);
    const outcome = await d.promise;
    onStarted?.(`wf-${m.offset}`, 'run'); // open until the test ends: no close frees a slot
    return outcome;
  });
  const { admission, consumer, internals } = await waitingForRoom(4, [10, 11, 12, 13, 14], {
    maxInFlight: 8,
    commitEveryRecords: 1,
  });
  // Four open, the fifth waits for room from memory.
  expect(handle).toHaveBeenCalledTimes(4);
  expect(consumer.calls).toEqual(['pause poimen.acme.dispatch/0']);
  for (const o of [11, 12]) starts.get(o)!.resolve('started');
  // Record 10 fails: one slot back is not yet room (half the share), so only the failure can end the wait.
  starts.get(10)!.reject(new Error('Temporal unreachable'));
  const settled = internals.turns.settled();
  // The outage paused the partition, and its backoff (250 ms) passes while record 13 is still in flight: the
  // partition stays paused, or kafkajs would fetch record 13 again beside it.
  await new Promise((r) => setTimeout(r, 400));
  expect(consumer.calls).toEqual(['pause poimen.acme.dispatch/0', 'pause poimen.acme.dispatch/0']);
  starts.get(13)!.resolve('started');
  await settled;
  expect(handle).toHaveBeenCalledTimes(4);
  // The batch's end resumes it: record 10 is fetched again.
  expect(consumer.calls).toEqual([
    'pause poimen.acme.dispatch/0',
    'pause poimen.acme.dispatch/0',
    'resume poimen.acme.dispatch/0',
  ]);
  admission.close();
});

test('stopping the consumer ends a batch waiting for room: it commits what finished, and resumes nothing', async () => {
  handle.mockImplementation(async (_ctx, { message: m }, { onStarted } = {}) => {
    onStarted?.(`wf-${m.offset}`, 'run');
    return 'started';
  });
  const { admission, consumer, internals } = await waitingForRoom(2, [0, 1, 2, 3], {
    commitEveryRecords: 1000,
  });
  expect(consumer.calls).toEqual(['pause poimen.acme.dispatch/0']);
  internals.group.consumer = undefined; // what stopping the consumer does first
  await internals.turns.settled();
  expect(handle).toHaveBeenCalledTimes(2);
  expect(consumer.commits.at(-1)!.offset).toBe('2');
  expect(consumer.calls).toEqual(['pause poimen.acme.dispatch/0']);
  admission.close();
});
