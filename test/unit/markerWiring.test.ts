/**
 * How the ingester uses MarkerBatches (markerBatches.ts): a fetch of transaction markers alone is committed past
 * only while the partition is this member's and its consumer current; the partition's next batch waits for that
 * commit, and stopping the consumer waits for it before disconnecting. MarkerBatches alone is
 * unit/markerBatches; real Kafka is it_transactional_producers. The consumer is a stub with kafkajs's event names.
 */
import { EventEmitter } from 'node:events';
import type { EachBatchPayload } from 'kafkajs';
import { loadRelayConfig } from '../../src/config';
import { Ingester } from '../../src/ingest/ingester';
import { handleRecord } from '../../src/ingest/startDispatch';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';
import { batchPayload } from '../support/batchPayload';
import { ingesterInternals } from '../support/ingesterInternals';

jest.mock('../../src/ingest/startDispatch', () => ({ handleRecord: jest.fn() }));
const handle = handleRecord as jest.MockedFunction<typeof handleRecord>;

const TOPIC = 'poimen.acme.dispatch';
const END = 'consumer.end_batch_process';

function stubConsumer() {
  const emitter = new EventEmitter();
  const log: string[] = [];
  let release: (() => void) | undefined;
  const consumer = {
    events: { END_BATCH_PROCESS: END, GROUP_JOIN: 'consumer.group_join', CRASH: 'consumer.crash' },
    on: (event: string, listener: (e: unknown) => void) => emitter.on(event, listener),
    /** While set, a marker commit stays in flight until released. */
    hold: false,
    commitOffsets: jest.fn(async (offsets: { partition: number; offset: string }[]) => {
      log.push(`markers ${offsets[0]!.partition}@${offsets[0]!.offset}`);
      if (consumer.hold) await new Promise<void>((r) => (release = r));
      log.push('markers committed');
    }),
    connect: async () => undefined,
    subscribe: async () => undefined,
    run: async () => undefined,
    disconnect: jest.fn(async () => void log.push('disconnect')),
    pause: () => undefined,
    resume: () => undefined,
  };
  /** kafkajs reports a fetch of the partition that handed no record over (markers up to `lastOffset`). */
  const markersFetched = (partition: number, lastOffset: string) =>
    emitter.emit(END, {
      payload: { topic: TOPIC, partition, batchSize: 0, firstOffset: '0', lastOffset },
    });
  return { consumer, log, markersFetched, release: () => release?.() };
}

function ingester(s: ReturnType<typeof stubConsumer>) {
  const cfg = loadRelayConfig('ingester', {});
  const kafka = { admin: () => ({}), consumer: () => s.consumer } as never;
  const ing = new Ingester(
    cfg,
    kafka,
    {} as never,
    createMetrics({ defaultMetrics: false }),
    createLogger('test', 'silent'),
  );
  return ingesterInternals(ing);
}

function batch(s: ReturnType<typeof stubConsumer>, offsets: number[]): EachBatchPayload {
  return batchPayload({ topic: TOPIC, partition: 0, offsets, commit: (o) => void s.log.push(`batch ${o}`) });
}

const tick = () => new Promise((r) => setImmediate(r));

beforeEach(() => {
  handle.mockReset();
  handle.mockImplementation(async () => 'started' as never);
});

test('commits past a fetch of markers alone only for a partition assigned to this member', async () => {
  const s = stubConsumer();
  const ing = ingester(s);
  await ing.startConsumer([TOPIC]);
  ing.onGroupJoin(s.consumer, { [TOPIC]: [0] });
  s.markersFetched(1, '7');
  await tick();
  expect(s.log).toEqual([]);
  s.markersFetched(0, '7');
  await tick();
  expect(s.log).toEqual(['markers 0@8', 'markers committed']);
});

test('commits nothing for a consumer that was replaced or has not joined', async () => {
  const s = stubConsumer();
  const ing = ingester(s);
  await ing.startConsumer([TOPIC]);
  s.markersFetched(0, '7'); // no assignment yet
  await tick();
  ing.onGroupJoin(s.consumer, { [TOPIC]: [0] });
  ing.group.consumer = {}; // replaced (a topic change, a restart after a crash)
  s.markersFetched(0, '9');
  await tick();
  expect(s.consumer.commitOffsets).not.toHaveBeenCalled();
});

test("the partition's next batch waits for a marker commit in flight, and stopping waits before disconnecting", async () => {
  const s = stubConsumer();
  const ing = ingester(s);
  await ing.startConsumer([TOPIC]);
  ing.onGroupJoin(s.consumer, { [TOPIC]: [0] });
  s.consumer.hold = true;
  s.markersFetched(0, '7');
  await tick();
  const next = ing.turns.run(s.consumer, batch(s, [8]));
  await tick();
  expect(handle).not.toHaveBeenCalled();
  s.release();
  await next;
  expect(s.log).toEqual(['markers 0@8', 'markers committed', 'batch 9']);

  s.markersFetched(0, '12');
  await tick();
  const stopping = ing.stopConsumer();
  await tick();
  expect(s.consumer.disconnect).not.toHaveBeenCalled();
  s.release();
  await stopping;
  expect(s.log.slice(-3)).toEqual(['markers 0@13', 'markers committed', 'disconnect']);
});
