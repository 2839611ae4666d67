/**
 * An undecodable record batch under production broker settings: Kafka's default
 * `group.initial.rebalance.delay.ms` (3000; the shared dev stack sets 0) delays every join of an empty group.
 * The batch must hold only its own partition (contract §2): every other partition, of every tenant, lagging
 * when the batch is met, flows again after one rejoin of the ingester, not after one wait per lagging partition.
 */
import fs from 'node:fs';
import { topics } from '../src/contract';
import { type DedicatedKafka, startKafkaWithProperties } from './support/dedicatedKafka';
import { sendUndecodableBatch } from './support/poisonBatch';
import { metricValue } from './support/relay';
import { type Harness, createHarness } from './support/relayHarness';
import { tempDir } from './support/tlsServices';
import { waitFor } from './support/wait';

jest.setTimeout(300_000);

const REBALANCE_DELAY_MS = 3000;
const PARTITIONS = 6;

let dir: string;
let broker: DedicatedKafka;
let h: Harness | undefined;

beforeAll(async () => {
  dir = tempDir('poimen-rebalance-delay-');
  broker = await startKafkaWithProperties(dir, [`group.initial.rebalance.delay.ms=${REBALANCE_DELAY_MS}`]);
});
afterEach(async () => {
  await h?.cleanup();
});
afterAll(async () => {
  await broker?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('with a rebalance delay, a batch met while every partition of two tenants lags holds only its partition, the others flow after one rejoin', async () => {
  h = await createHarness({ tenants: 2, partitions: PARTITIONS, kafkaBrokers: [broker.brokers] });
  const harness = h;
  const [a, b] = harness.tenants as [string, string];
  // A backlog on every partition of both tenants, then the bad batch on a's partition 0, before the ingester runs:
  // its first fetch meets the bad batch with every partition lagging.
  const keys: string[] = [];
  for (const t of [a, b]) {
    for (let p = 0; p < PARTITIONS; p++) {
      const batch = [0, 1, 2].map((i) => `${t}-p${p}-${i}`);
      // a's partition 0 waits from its committed offset, records before the bad batch in that fetch with it.
      if (t !== a || p !== 0) keys.push(...batch);
      await harness.producer.send({
        topic: topics.dispatch(t),
        acks: -1,
        messages: batch.map((k) => ({ partition: p, key: `${t}:${k}`, value: harness.dispatchValue(k) })),
      });
    }
  }
  const poisonOffset = await sendUndecodableBatch(harness.producer, topics.dispatch(a), 0, [
    { key: `${a}:poison`, value: harness.dispatchValue('poison') },
  ]);
  await harness.producer.send({
    topic: topics.dispatch(a),
    acks: -1,
    messages: [{ partition: 0, key: `${a}:after`, value: harness.dispatchValue('after') }],
  });
  await harness.startWorker();

  const ingester = await harness.startIngester();
  const started = Date.now();
  // The ingester's own work: every other partition's records started and committed to the log end.
  await waitFor(
    async () => {
      const all = [
        ...(await harness.offsets(a)).filter((p) => p.partition !== 0),
        ...(await harness.offsets(b)),
      ];
      return all.every((p) => p.committed === p.high);
    },
    { timeoutMs: 120_000, what: 'every other partition committed to its log end' },
  );
  const elapsed = Date.now() - started;
  // Two joins (at start, and again after the crash) cost two delays; a fresh group per lagging partition
  // would cost one delay each (2 × PARTITIONS partitions lag here) before any of them flowed again.
  expect(elapsed).toBeLessThan(2 * PARTITIONS * REBALANCE_DELAY_MS);
  await harness.api.waitFor(
    (api) => keys.every((k) => api.requestsFor(k).length >= 1),
    120_000,
    'every record of the other partitions relayed',
  );

  // The bad batch's partition is held at the batch, not skipped, and named.
  await waitFor(
    async () =>
      metricValue(await ingester.metrics(), 'poimen_ingest_undecodable_partitions', {
        topic: topics.dispatch(a),
        partition: '0',
      }) === 1,
    { timeoutMs: 30_000, what: 'poimen_ingest_undecodable_partitions naming the partition' },
  );
  expect(harness.api.requestsFor('poison')).toHaveLength(0);
  expect(harness.api.requestsFor('after')).toHaveLength(0);
  const held = (await harness.offsets(a)).find((p) => p.partition === 0)!;
  expect(held.committed).toBeLessThanOrEqual(Number(poisonOffset));
  const line = fs
    .readFileSync(ingester.logFile, 'utf8')
    .split('\n')
    .find((l) => l.includes('held at offset') && l.includes(topics.dispatch(a)));
  expect(line).toContain('"partition":0');
  expect(line).toContain(`"offset":"${poisonOffset}"`);
});
