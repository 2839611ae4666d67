/**
 * The `deadLetter` activity's choice of payload (contract §6): the source record read back from Kafka is carried
 * only when it is this dispatch; a record at those coordinates that holds another dispatch of the same tenant (a
 * topic made anew, offsets reused) is not, and the payload is rebuilt from the workflow input instead.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { Agent } from 'undici';
import { type DlqRecord, redriveCountOf } from '../../src/contract';
import { createActivities } from '../../src/activities';
import { createBreakerGate } from '../../src/activities/breakerGate';
import type { DlqPublisher } from '../../src/kafka/dlqPublisher';
import type { SourceRecord } from '../../src/kafka/sourceRecord';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';
import type { DeadLetterInput, DispatchInput } from '../../src/contract/workflow';
import type { StartedWith } from '../../src/temporal/history';

const dispatcher = new Agent();
afterAll(() => dispatcher.close());

type SourceRead = (at: unknown, signal: AbortSignal) => Promise<SourceRecord | undefined>;

function deadLetterWith(found: SourceRecord | undefined | SourceRead, startedWith?: StartedWith) {
  const published: DlqRecord[] = [];
  /** Whether the publish's signal had aborted when it was called. */
  const publishedLate: boolean[] = [];
  const metrics = createMetrics();
  const logger = createLogger('unit', 'silent');
  const acts = createActivities({
    gate: createBreakerGate({ failures: 5, probeIntervalMs: 1_000, paced: false }, metrics, logger),
    dispatcher,
    runsApi: { url: 'http://127.0.0.1:9' },
    userAgent: 'poimen-relay/unit',
    dlq: {
      publish: async (record: DlqRecord, _key: unknown, opts: { signal: AbortSignal }) => {
        published.push(record);
        publishedLate.push(opts.signal.aborted);
      },
    } as unknown as DlqPublisher,
    metrics,
    logger,
    startedWith: async () => startedWith ?? Promise.reject(new Error('not used')),
    sourceRecord: typeof found === 'function' ? found : async () => found,
    callHistory: async () => undefined,
    tenantPause: () => undefined,
  });
  return { acts, published, publishedLate };
}

const env = (startToCloseTimeoutMs = 10_000) =>
  new MockActivityEnvironment({ attempt: 1, startToCloseTimeoutMs } as never, {
    logger: new DefaultLogger('ERROR'),
  });

const INPUT: DeadLetterInput = {
  tenant: 'acme',
  dispatchKey: 'd-1',
  dispatch: { workflow_ref: 'onboarding@v3', input: { user: 1 }, goal_id: null, dispatch_key: 'd-1' },
  source: { topic: 'poimen.acme.dispatch', partition: 0, offset: '7', timestamp: '1700000000000' },
  error: 'HTTP 503',
  httpStatus: 503,
  retryCount: 3,
  maxRetries: 3,
  workflowId: 'dispatch:acme:d-1',
  workflowRunId: 'run-1',
};

const record = (dispatchKey: string): SourceRecord => ({
  value: Buffer.from(
    JSON.stringify({
      workflow_ref: 'onboarding@v3',
      input: { user: 2 },
      goal_id: null,
      dispatch_key: dispatchKey,
    }),
  ),
  key: Buffer.from(`key-of-${dispatchKey}`),
  headers: {},
});

describe('deadLetter: the source record is carried only when it is this dispatch', () => {
  test('the record at the coordinates, when it is this dispatch, is carried as consumed', async () => {
    const { acts, published } = deadLetterWith(record('d-1'));
    await env().run(acts.deadLetter, INPUT);
    expect(published).toHaveLength(1);
    expect(published[0]!.payload).toBe(record('d-1').value!.toString());
    expect(published[0]!.source.key).toBe('key-of-d-1');
    expect(published[0]!.error).toBe('HTTP 503');
  });

  test('a valid record of the same tenant with another dispatch_key is not carried: the payload is rebuilt', async () => {
    const { acts, published } = deadLetterWith(record('d-other'));
    await env().run(acts.deadLetter, INPUT);
    expect(published).toHaveLength(1);
    const [dl] = published as [DlqRecord];
    expect(dl.dispatch_key).toBe('d-1');
    expect(JSON.parse(dl.payload!)).toEqual(INPUT.dispatch);
    expect(dl.source.key).toBeNull();
    expect(dl.error).toContain('poimen.acme.dispatch partition 0 offset 7 holds another record');
  });

  test('a redriven dispatch whose record is gone keeps its redrive count, from the start memo', async () => {
    // Without it a redrive reads 0 from the rebuilt dead letter and takes this dispatch again, without end.
    const { dispatch: _carriedByOldExecutionsOnly, ...current } = INPUT;
    const started = { tenant: 'acme', dispatch: INPUT.dispatch!, source: INPUT.source } as DispatchInput;
    const { acts, published } = deadLetterWith(undefined, { input: started, redriveCount: 2 });
    await env().run(acts.deadLetter, current);
    const [dl] = published as [DlqRecord];
    expect(JSON.parse(dl.payload!)).toEqual(INPUT.dispatch);
    expect(dl.error).toContain('is no longer in Kafka');
    expect(dl.source.headers).toEqual({ 'poimen-redrive-count': '2' });
    expect(redriveCountOf(dl.source)).toBe(2);
  });

  test('a dispatch never redriven whose record is gone gets no count header', async () => {
    const { dispatch: _carriedByOldExecutionsOnly, ...current } = INPUT;
    const started = { tenant: 'acme', dispatch: INPUT.dispatch!, source: INPUT.source } as DispatchInput;
    const { acts, published } = deadLetterWith(undefined, { input: started, redriveCount: 0 });
    await env().run(acts.deadLetter, current);
    expect(published[0]!.source.headers).toEqual({});
  });
});

describe('deadLetter: the source read has a share of the attempt, the publish the rest', () => {
  test('a read still waiting at 40 % of the attempt is given up: the dead letter goes out rebuilt, in time', async () => {
    // A burst of dead letters: the read waits its turn behind others for longer than the attempt lasts.
    let readSignal: AbortSignal | undefined;
    const waitsForever: SourceRead = (_at, signal) => {
      readSignal = signal;
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    };
    const { acts, published, publishedLate } = deadLetterWith(waitsForever);
    await env(1_000).run(acts.deadLetter, INPUT);
    expect(readSignal?.aborted).toBe(true);
    expect(published).toHaveLength(1);
    expect(JSON.parse(published[0]!.payload!)).toEqual(INPUT.dispatch);
    expect(published[0]!.error).toContain('offset 7 could not be read in time');
    // Given up at 400 ms of the 1 s attempt: the publish starts before the attempt's own deadline (900 ms).
    expect(publishedLate).toEqual([false]);
  });

  test('the read is given up at 40 % of the attempt', async () => {
    let abortedAfterMs: number | undefined;
    const started = Date.now();
    const { acts } = deadLetterWith((_at, signal) => {
      return new Promise((_, reject) =>
        signal.addEventListener('abort', () => {
          abortedAfterMs = Date.now() - started;
          reject(signal.reason);
        }),
      );
    });
    await env(3_000).run(acts.deadLetter, INPUT);
    // 1.2 s of the 3 s attempt: well before the publish's own deadline (2.7 s).
    expect(abortedAfterMs).toBeGreaterThanOrEqual(1_100);
    expect(abortedAfterMs).toBeLessThan(2_000);
  });

  test('a read that fails before its deadline says why', async () => {
    const { acts, published } = deadLetterWith(async () => {
      throw new Error('TOPIC_AUTHORIZATION_FAILED');
    });
    await env(1_000).run(acts.deadLetter, INPUT);
    expect(published[0]!.error).toContain('offset 7 could not be read (TOPIC_AUTHORIZATION_FAILED)');
  });
});
