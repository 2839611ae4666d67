/**
 * Outages that overlap with something else the consumer goes through: a crash kafkajs restarts from, a rebalance
 * that moves partitions away. An outage is a partition paused with a backoff timer that resumes it
 * (pausedPartitions.ts); what happens to that timer and to the outage's entry when the consumer changes under it
 * decides whether the process survives and whether it ever becomes ready again.
 */
import type { EachBatchPayload } from 'kafkajs';
import { loadRelayConfig } from '../../src/config';
import { Ingester } from '../../src/ingest/ingester';
import { PausedPartitions } from '../../src/ingest/pausedPartitions';
import { handleRecord } from '../../src/ingest/startDispatch';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';
import { batchPayload } from '../support/batchPayload';
import { ingesterInternals } from '../support/ingesterInternals';

jest.mock('../../src/ingest/startDispatch', () => ({ handleRecord: jest.fn() }));
const handle = handleRecord as jest.MockedFunction<typeof handleRecord>;

/** kafkajs's consumer between a crash and its restart: it has no consumer group, pause and resume throw. */
function crashedConsumer() {
  const calls: string[] = [];
  let initialized = true;
  const guard = (what: string) => (t: { topic: string; partitions?: number[] }[]) => {
    if (!initialized)
      throw new Error('Consumer group was not initialized, consumer#run must be called first');
    calls.push(`${what} ${t[0]!.topic}/${t[0]!.partitions}`);
  };
  return {
    calls,
    crash: () => (initialized = false),
    restart: () => (initialized = true),
    pause: jest.fn(guard('pause')),
    resume: jest.fn(guard('resume')),
    commitOffsets: jest.fn(async () => undefined),
  };
}

afterEach(() => jest.useRealTimers());

describe('an outage’s backoff timer', () => {
  it('survives a consumer that crashed meanwhile: the resume that throws ends nothing, the next failure pauses again', () => {
    jest.useFakeTimers();
    const metrics = createMetrics({ defaultMetrics: false });
    const paused = new PausedPartitions(metrics.pausedPartitions);
    const consumer = crashedConsumer();
    paused.failed(consumer, 'poimen.a.dispatch', 0, 'Temporal unreachable');
    consumer.crash();
    // Before the fix the resume's throw escaped the timer: in a process, an uncaught exception, exit 1.
    expect(() => jest.advanceTimersByTime(1_000)).not.toThrow();
    consumer.restart();
    // The restarted consumer fetches the record again and it fails again: paused again, with the next backoff.
    paused.failed(consumer, 'poimen.a.dispatch', 0, 'Temporal unreachable');
    expect(consumer.calls).toEqual(['pause poimen.a.dispatch/0', 'pause poimen.a.dispatch/0']);
    jest.advanceTimersByTime(500);
    expect(consumer.calls.at(-1)).toBe('resume poimen.a.dispatch/0');
  });
});

function ingester() {
  const cfg = loadRelayConfig('ingester', {});
  const metrics = createMetrics({ defaultMetrics: false });
  const kafka = { admin: () => ({}) } as never;
  const ing = new Ingester(
    { ...cfg, ingest: { ...cfg.ingest, maxInFlight: 4 } },
    kafka,
    {} as never,
    metrics,
    createLogger('test', 'silent'),
  );
  const internals = ingesterInternals(ing);
  return { ing, metrics, internals };
}

function batch(topic: string, partition: number, offsets: number[], consumer: object): EachBatchPayload {
  return batchPayload({ topic, partition, offsets, extra: consumer });
}

describe('a consumer kafkajs restarted during an outage', () => {
  it('pauses the partition again at its next failure, with the next backoff', () => {
    jest.useFakeTimers();
    const metrics = createMetrics({ defaultMetrics: false });
    const paused = new PausedPartitions(metrics.pausedPartitions);
    const consumer = crashedConsumer();
    paused.failed(consumer, 'poimen.a.dispatch', 0, 'Temporal unreachable');
    paused.failed(consumer, 'poimen.a.dispatch', 0, 'Temporal unreachable');
    // The restarted consumer forgot the pause and fetched the record again, which failed again.
    paused.consumerRestarted();
    expect(paused.failed(consumer, 'poimen.a.dispatch', 0, 'Temporal unreachable')).toBe(3);
    expect(consumer.calls).toEqual(['pause poimen.a.dispatch/0', 'pause poimen.a.dispatch/0']);
    expect(paused.size).toBe(1);
    jest.advanceTimersByTime(999); // the third failure's backoff: 250 ms x 2^2
    expect(consumer.calls).toHaveLength(2);
    jest.advanceTimersByTime(1);
    expect(consumer.calls.at(-1)).toBe('resume poimen.a.dispatch/0');
  });
});

describe('a rebalance during an outage', () => {
  beforeEach(() => handle.mockReset());

  it('drops the outages of partitions this member lost: ready again, gauge at 0, their pauses lifted', async () => {
    handle.mockImplementation(async () => {
      throw new Error('Temporal unreachable');
    });
    const { ing, metrics, internals } = ingester();
    const consumer = crashedConsumer();
    internals.group.consumer = consumer;
    internals.onGroupJoin(consumer, { 'poimen.a.dispatch': [0, 1] });
    await internals.turns.run(consumer, batch('poimen.a.dispatch', 0, [5], consumer));
    await internals.turns.run(consumer, batch('poimen.a.dispatch', 1, [9], consumer));
    expect(ing.ready()).toBe(false);

    // Another member joins and takes both partitions; this one keeps none of the topic.
    internals.onGroupJoin(consumer, { 'poimen.b.dispatch': [0] });
    expect(ing.ready()).toBe(true);
    expect(ing.readinessDetail()).toBe('ok');
    const gauge = (await metrics.pausedPartitions.get()).values.find(
      (v) => v.labels.topic === 'poimen.a.dispatch',
    );
    expect(gauge?.value).toBe(0);
    // kafkajs keeps a pause across assignments: one left behind would hold the partition when it comes back.
    expect(consumer.calls).toEqual(
      expect.arrayContaining(['resume poimen.a.dispatch/0', 'resume poimen.a.dispatch/1']),
    );
  });

  it('a start in flight that fails after its partition moved to another member opens no outage here', async () => {
    let fail!: (e: Error) => void;
    handle.mockImplementation(() => new Promise((_resolve, reject) => (fail = reject)));
    const { ing, internals } = ingester();
    const consumer = crashedConsumer();
    internals.group.consumer = consumer;
    internals.onGroupJoin(consumer, { 'poimen.a.dispatch': [0] });
    const running = internals.turns.run(consumer, batch('poimen.a.dispatch', 0, [5], consumer));
    await new Promise((r) => setImmediate(r));
    // kafkajs rejoins from another broker's fetch while this start waits on Temporal; the partition goes elsewhere.
    internals.onGroupJoin(consumer, { 'poimen.b.dispatch': [0] });
    fail(new Error('Temporal unreachable'));
    await running;
    expect(ing.ready()).toBe(true);
    expect(consumer.calls).toEqual([]);
  });

  it('keeps the outage of a partition it still owns', async () => {
    handle.mockImplementation(async () => {
      throw new Error('Temporal unreachable');
    });
    const { ing, internals } = ingester();
    const consumer = crashedConsumer();
    internals.group.consumer = consumer;
    internals.onGroupJoin(consumer, { 'poimen.a.dispatch': [0, 1] });
    await internals.turns.run(consumer, batch('poimen.a.dispatch', 0, [5], consumer));
    await internals.turns.run(consumer, batch('poimen.a.dispatch', 1, [9], consumer));
    internals.onGroupJoin(consumer, { 'poimen.a.dispatch': [1] });
    expect(ing.ready()).toBe(false);
    expect(ing.readinessDetail()).toMatch(/paused: 1 partition\(s\); oldest poimen\.a\.dispatch\/1 /);
    await internals.stopConsumer().catch(() => undefined);
  });
});
