/**
 * Many dispatches refused at once, on a broker with the production group setting
 * (`group.initial.rebalance.delay.ms` 3000): each dead letter reads its source record back through a throwaway
 * consumer group, whose first join alone waits 3 s, a few reads at a time. A burst of dead letters then waits for
 * reads longer than a `deadLetter` attempt lasts; the dead letters must still all be published, each once, soon,
 * and not wait behind reads for attempts that have already given up. Real Kafka (a dedicated broker), real
 * Temporal, the relay's real worker process.
 */
import fs from 'node:fs';
import { WorkflowFailedError } from '@temporalio/client';
import { WORKFLOW_TYPE } from '../src/contract';
import type { DispatchPolicy } from '../src/contract/workflow';
import { dispatchStartOptions } from '../src/ingest/startDispatch';
import { type DedicatedKafka, startKafkaWithProperties } from './support/dedicatedKafka';
import { directDispatchInput } from './support/directDispatch';
import { type Harness, createHarness } from './support/relayHarness';
import { tempDir } from './support/tlsServices';

jest.setTimeout(300_000);

/** Refused at once: more source reads than fit in one attempt's time, four at a time and 3 s or more each. */
const DISPATCHES = 40;
/**
 * The attempt's timeout, short so that the burst outlasts an attempt in seconds, not minutes: with the production
 * value (60 s) the same happens from about 80 dispatches refused together.
 */
const DEAD_LETTER_TIMEOUT_MS = 10_000;

let dir: string | undefined;
let broker: DedicatedKafka | undefined;
let h: Harness | undefined;
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
  await broker?.stop();
  broker = undefined;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** The retry policy of the dispatches: one call, refused for good. */
const POLICY: DispatchPolicy = {
  maxAttempts: 1,
  initialIntervalMs: 200,
  maxIntervalMs: 1000,
  backoff: 2,
  attemptTimeoutMs: 3000,
  deadLetterTimeoutMs: DEAD_LETTER_TIMEOUT_MS,
};

test(`${DISPATCHES} dispatches refused at once on a broker whose group joins wait 3 s: every one is dead-lettered once, within a minute`, async () => {
  dir = tempDir('poimen-burst-broker-');
  broker = await startKafkaWithProperties(dir, ['group.initial.rebalance.delay.ms=3000']);
  h = await createHarness({ kafkaBrokers: [broker.brokers] });
  const harness = h;
  const keys = Array.from({ length: DISPATCHES }, (_, i) => `burst-${i}`);
  // The source records the dead letters read back: offsets 0.. of the one partition.
  for (const key of keys) await harness.publish(harness.dispatchValue(key), { key });
  harness.api.always({ kind: 'status', status: 422 });
  await harness.startWorker();

  const started = Date.now();
  const handles = await Promise.all(
    keys.map((key, i) =>
      harness.client.workflow.start(
        WORKFLOW_TYPE,
        dispatchStartOptions(
          harness.taskQueue,
          directDispatchInput(harness, { key, offset: i, policy: POLICY }),
        ),
      ),
    ),
  );
  const letters = await harness.readDlq(DISPATCHES, 60_000);
  const seconds = (Date.now() - started) / 1000;
  const whole = letters.filter((r) => !r.error.includes('payload rebuilt')).length;
  process.stderr.write(
    `[dead-letter burst] ${letters.length} dead letters for ${DISPATCHES} dispatches in ${seconds.toFixed(1)} s; ` +
      `${whole} carry the source record, ${letters.length - whole} the payload rebuilt\n`,
  );
  expect(letters.map((r) => r.dispatch_key).sort()).toEqual([...keys].sort());
  for (const handle of handles) await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
});
