/**
 * Batches that go on from memory after handing their turn back (keptBatches.ts): what they keep is counted by the
 * fetch buffers it keeps alive and bounded; their waits for room leave nothing behind; an outage's resume waits
 * for the batch's end; and what finishes while the batch waits is committed (batchCommits.ts). The batch turn's
 * use of them is ingesterBatch.test.ts's; real Kafka is it_ingest_production's and the bench's.
 */
import { Gauge } from 'prom-client';
import { BatchCommits } from '../../src/ingest/batchCommits';
import { TenantAdmission } from '../../src/ingest/admission';
import { GroupMembership } from '../../src/ingest/membership';
import { KeptBatches } from '../../src/ingest/keptBatches';
import { PausedPartitions } from '../../src/ingest/pausedPartitions';
import type { KafkaConsumer, KafkaRecord } from '../../src/kafka/port';
import { createLogger } from '../../src/logger';

const log = createLogger('test', 'silent');
const at = { topic: 'poimen.acme.dispatch', partition: 0 };

function parts(
  maxBytes: number,
  admission = new TenantAdmission({ maxOpen: 0, tenantMaxOpen: 0, watch: () => Promise.resolve() }),
) {
  const gauge = new Gauge({ name: 'kept_test_bytes', help: 'test', registers: [] });
  const membership = new GroupMembership();
  const calls: string[] = [];
  const consumer = {
    pause: (t: { topic: string; partitions: number[] }[]) => calls.push(`pause ${t[0]!.partitions[0]}`),
    resume: (t: { topic: string; partitions: number[] }[]) => calls.push(`resume ${t[0]!.partitions[0]}`),
  } as unknown as KafkaConsumer;
  membership.consumer = consumer;
  const paused = new PausedPartitions(
    new Gauge({ name: 'kept_test_paused', help: 'test', labelNames: ['topic'], registers: [] }),
  );
  const kept = new KeptBatches({ maxBytes, gauge, membership, paused, admission, logger: log });
  return { kept, gauge, membership, consumer, calls, paused };
}

/** Records whose values are views into one fetch response of `size` bytes, as kafkajs decodes them. */
function fetched(size: number, records: number): KafkaRecord[] {
  const response = Buffer.alloc(size);
  return Array.from({ length: records }, (_, i) => ({
    offset: String(i),
    key: response.subarray(i * 10, i * 10 + 4),
    value: response.subarray(i * 10 + 4, i * 10 + 10),
    headers: { trace: response.subarray(0, 2) },
  })) as unknown as KafkaRecord[];
}

const gaugeValue = async (g: Gauge) => (await g.get()).values[0]?.value ?? 0;

describe('what kept batches keep', () => {
  it('counts a fetch response once however many batches view it, refuses what would pass the bound, and frees a response when its last batch lets go', async () => {
    const { kept, gauge, consumer } = parts(100_000);
    const response = fetched(60_000, 100);
    // Two partitions' batches from the same fetch: one response kept.
    const first = kept.keep(consumer, at, response.slice(0, 50))!;
    const second = kept.keep(consumer, { ...at, partition: 1 }, response.slice(50))!;
    expect(kept.keptBytes).toBe(60_000);
    expect(await gaugeValue(gauge)).toBe(60_000);
    // Another fetch's 60,000 bytes would make 120,000: refused, its rest is fetched again instead.
    expect(kept.keep(consumer, { ...at, partition: 2 }, fetched(60_000, 10))).toBeUndefined();
    first();
    first(); // letting go twice is once
    expect(kept.keptBytes).toBe(60_000);
    second();
    expect(kept.keptBytes).toBe(0);
    expect(await gaugeValue(gauge)).toBe(0);
    // Now it fits.
    expect(kept.keep(consumer, { ...at, partition: 2 }, fetched(60_000, 10))).toBeDefined();
  });

  it('pauses the partition it keeps, and resumes it when done unless an outage holds it or the consumer was replaced', () => {
    const { kept, consumer, calls, paused, membership } = parts(1_000_000);
    kept.done(consumer, at, kept.keep(consumer, at, fetched(100, 2))!, { resume: true });
    expect(calls).toEqual(['pause 0', 'resume 0']);

    // Its tenant was paused: the partition waits for admission's resume, its bytes let go all the same.
    calls.length = 0;
    kept.done(consumer, at, kept.keep(consumer, at, fetched(100, 2))!, { resume: false });
    expect(calls).toEqual(['pause 0']);
    expect(kept.keptBytes).toBe(0);

    // A record of the batch failed: its outage's backoff holds the partition and is what resumes it.
    calls.length = 0;
    const letGo = kept.keep(consumer, at, fetched(100, 2))!;
    paused.failed(kept.pausable(consumer, at), at.topic, at.partition, 'Temporal unreachable');
    kept.done(consumer, at, letGo, { resume: true });
    expect(calls).toEqual(['pause 0', 'pause 0']);
    paused.clear();

    calls.length = 0;
    const replaced = kept.keep(consumer, at, fetched(100, 2))!;
    membership.consumer = undefined;
    kept.done(consumer, at, replaced, { resume: true });
    expect(calls).toEqual(['pause 0']);
  });

  it("holds back an outage's resume while the partition's kept batch runs: its records in flight are not fetched again", () => {
    const { kept, consumer, calls } = parts(1_000_000);
    const pausable = kept.pausable(consumer, at);
    const letGo = kept.keep(consumer, at, fetched(100, 2))!;
    pausable.resume([{ topic: at.topic, partitions: [0] }]);
    expect(calls).toEqual(['pause 0']);
    kept.done(consumer, at, letGo, { resume: true });
    expect(calls).toEqual(['pause 0', 'resume 0']);
    // No kept batch: the outage resumes by itself.
    pausable.resume([{ topic: at.topic, partitions: [0] }]);
    expect(calls).toEqual(['pause 0', 'resume 0', 'resume 0']);
  });
});

describe('a partition two runs of the consumer reach (kafkajs restarted it, forgetting its pauses)', () => {
  it("the end of the earlier run's kept batch leaves the partition to the later run's batch, kept or not", () => {
    const { kept, consumer, calls } = parts(1_000_000);
    // The later run's batch is kept too: the earlier one's end is not the partition's.
    const earlier = kept.keep(consumer, at, fetched(100, 2))!;
    const later = kept.keep(consumer, at, fetched(100, 2))!;
    calls.length = 0;
    expect(kept.done(consumer, at, earlier, { resume: true })).toBe(false);
    expect(calls).toEqual([]);
    expect(kept.done(consumer, at, later, { resume: true })).toBe(true);
    expect(calls).toEqual(['resume 0']);
    // The later run's batch was not kept: it takes the partition over when it ends.
    const before = kept.keep(consumer, at, fetched(100, 2))!;
    kept.takeOver(at);
    calls.length = 0;
    expect(kept.done(consumer, at, before, { resume: true })).toBe(false);
    expect(calls).toEqual([]);
    expect(kept.keptBytes).toBe(0);
  });
});

describe('a kept batch waiting for room', () => {
  it('wakes when the generation closes, when the consumer stops, or when the batch ends it, and leaves no waiter on the generation', async () => {
    // One open per tenant, and it is taken: no room comes from admission in this test.
    const admission = new TenantAdmission({
      maxOpen: 0,
      tenantMaxOpen: 1,
      watch: () => new Promise(() => undefined),
    });
    expect(admission.take('acme')).toBe(true);
    const { kept, membership } = parts(1_000_000, admission);

    const first = membership.generation;
    const closing = kept.room('acme', at, first, () => undefined);
    expect(first.waiting).toBe(1);
    first.askRejoin(new Error('rebalancing'));
    await closing;
    expect(first.waiting).toBe(0);
    // A generation already closing: no wait at all.
    await kept.room('acme', at, first, () => undefined);
    expect(first.waiting).toBe(0);

    membership.nextGeneration();
    const stopped = kept.room('acme', at, membership.generation, () => undefined);
    kept.wakeAll();
    await stopped;
    expect(membership.generation.waiting).toBe(0);

    let end: (() => void) | undefined;
    const ended = kept.room('acme', at, membership.generation, (wake) => (end = wake));
    end!();
    await ended;
    expect(membership.generation.waiting).toBe(0);
    admission.close();
  });
});

describe("a batch's commits while it waits for room", () => {
  function commitsOf(offsets: string[], send: (next: string) => Promise<void>) {
    const membership = new GroupMembership();
    return new BatchCommits({
      offsets,
      send,
      resolve: () => undefined,
      live: () => true,
      keepTrying: () => true,
      ends: () => false,
      generation: membership.generation,
      every: 1000,
      lastCommitBudgetMs: 60_000,
      log,
    });
  }

  it('commits what finished when the wait begins, and each record that finishes during it, not every 1,000', async () => {
    const sent: string[] = [];
    let release!: () => void;
    const commits = commitsOf(['10', '11', '12', '13'], (next) => {
      sent.push(next);
      return next === '12' ? new Promise<void>((r) => (release = r)) : Promise.resolve();
    });
    commits.finished(0);
    commits.finished(1);
    expect(sent).toEqual([]);
    commits.waitsForRoom(true);
    expect(sent).toEqual(['12']);
    // Record 12 finishes while the commit of 12 is in flight: one more commit covers it once that one lands.
    commits.finished(2);
    release();
    await new Promise((r) => setImmediate(r));
    expect(sent).toEqual(['12', '13']);
    // Taking records again: back to every 1,000.
    commits.waitsForRoom(false);
    commits.finished(3);
    await new Promise((r) => setImmediate(r));
    expect(sent).toEqual(['12', '13']);
  });
});
