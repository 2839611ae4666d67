/**
 * Records at the size limit, under the processes' heap limits (RELAY_HEAP): ~0.9 MB dispatches whose JSON
 * expands twenty-fold once parsed (hundreds of thousands of empty objects) are relayed without crashing the
 * ingester or the worker, and a record whose input would encode beyond Temporal's payload limit (number
 * formatting grows `1e20` to 21 digits) is dead-lettered with its reason instead of stalling its partition.
 */
import { topics } from '../src/contract';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

const RECORD_BYTES = 900_000;

/** A valid dispatch whose `input` is `[{},{},…]`, padded to about `bytes`. */
function expanding(key: string, bytes: number): Buffer {
  const head = `{"workflow_ref":"big@v1","goal_id":null,"dispatch_key":"${key}","input":[`;
  const n = Math.floor((bytes - head.length - 2) / 3);
  return Buffer.from(`${head}${Array.from({ length: n }, () => '{}').join(',')}]}`);
}

/** A valid dispatch within DISPATCH_MAX_BYTES whose input encodes to about 4.4× its size. */
function numberBomb(key: string, bytes: number): Buffer {
  const head = `{"workflow_ref":"big@v1","goal_id":null,"dispatch_key":"${key}","input":[`;
  const n = Math.floor((bytes - head.length - 2) / 5);
  return Buffer.from(`${head}${Array.from({ length: n }, () => '1e20').join(',')}]}`);
}

describe('records at the size limit, under the heap limits', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await createHarness({ partitions: 4 });
  });
  afterAll(async () => {
    await h?.cleanup();
  });

  it('relays 0.9 MB records that expand when parsed, dead-letters one Temporal would refuse, and no process crashes', async () => {
    const worker = await h.startWorker();
    const ingester = await h.startIngester();
    const big = Array.from({ length: 8 }, (_, i) => `big-${i}`);
    const bombs = ['bomb-0', 'bomb-1'];
    const small = Array.from({ length: 4 }, (_, i) => `small-${i}`);
    // One record per produce request: each is close to the broker's 1 MB message limit.
    for (const [i, key] of big.entries()) {
      await h.producer.send({
        topic: topics.dispatch(h.tenant),
        acks: -1,
        messages: [{ partition: i % 4, value: expanding(key, RECORD_BYTES) }],
      });
    }
    for (const [i, key] of bombs.entries()) {
      await h.producer.send({
        topic: topics.dispatch(h.tenant),
        acks: -1,
        messages: [{ partition: i, value: numberBomb(key, RECORD_BYTES) }],
      });
    }
    await h.producer.send({
      topic: topics.dispatch(h.tenant),
      acks: -1,
      messages: small.map((k, i) => ({ partition: i % 4, value: h.dispatchValue(k) })),
    });

    await h.api.waitFor(
      (api) => [...big, ...small].every((k) => api.runs.has(k)),
      240_000,
      'every big and small dispatch to have a run',
    );
    const dlq = await h.readDlq(2, 120_000);
    expect(dlq.map((r) => r.dispatch_key).sort()).toEqual(bombs);
    for (const r of dlq) {
      expect(r.type).toBe('malformed_dispatch');
      expect(r.error).toMatch(/^workflow input encodes to \d+ bytes, over the \d+ Temporal accepts/);
    }
    // The big inputs reached the API whole.
    const published = JSON.parse(expanding('big-0', RECORD_BYTES).toString('utf8')) as { input: unknown[] };
    const sent = h.api.requestsFor('big-0')[0]?.json as { input: unknown[] } | undefined;
    expect(published.input.length).toBeGreaterThan(290_000);
    expect(sent?.input).toEqual(published.input);

    // Neither process died on the way (the harness would have had to restart them: it does not).
    expect(ingester.child.exitCode).toBeNull();
    expect(worker.child.exitCode).toBeNull();
    await waitFor(async () => (await fetch(`http://127.0.0.1:${ingester.metricsPort}/healthz`)).ok, {
      what: 'ingester healthy',
    });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${worker.metricsPort}/healthz`)).ok, {
      what: 'worker healthy',
    });
  }, 600_000);
});
