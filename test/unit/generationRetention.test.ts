/**
 * What a batch leaves behind in a group generation that lasts: nothing. A generation lives as long as the group is
 * stable (weeks, in production), and every batch of it waits on its commits "unless the generation ends first". A
 * wait that hangs a reaction on the generation's own long-lived promise keeps that reaction until the generation
 * ends: a few hundred bytes per batch, which at a steady trickle of one record per batch filled the ingester's
 * shipped 96 MiB heap within hours. The heap after a full GC must not grow with the number of batches.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { BatchCommits } from '../../src/ingest/batchCommits';
import { GroupGeneration } from '../../src/ingest/generation';
import { createLogger } from '../../src/logger';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/**
 * The heap's growth since `before`, the least of three readings a tenth of a second apart. The unit files run in
 * one process, so memory an earlier file's work still holds at one reading (a request or timer in flight) may be
 * freed by the next; what the batches retained is held at every reading (tens of megabytes for a reaction per
 * batch). Growth of another kind that lasts (compiled code, fragmentation) is not filtered.
 */
async function retainedSince(before: number): Promise<number> {
  let least = Infinity;
  for (let i = 0; i < 3; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 100));
    least = Math.min(least, heapAfterGc() - before);
  }
  return least;
}

const log = createLogger('test', 'silent');

/** One batch of one record in the given generation, committed through `send`. */
async function oneBatch(
  generation: GroupGeneration,
  offset: number,
  send: () => Promise<void> = () => Promise.resolve(),
): Promise<void> {
  const commits = new BatchCommits({
    offsets: [String(offset)],
    send,
    resolve: () => undefined,
    live: () => !generation.over,
    keepTrying: () => true,
    ends: () => false,
    generation,
    every: 100,
    lastCommitBudgetMs: 60_000,
    log,
  });
  commits.finished(0);
  await commits.finish();
}

/** One batch whose first commit fails once, so its last commit waits out one retry delay. */
function oneRetriedBatch(generation: GroupGeneration, offset: number): Promise<void> {
  let tries = 0;
  return oneBatch(generation, offset, () =>
    tries++ === 0 ? Promise.reject(new Error('coordinator busy')) : Promise.resolve(),
  );
}

describe('a long group generation', () => {
  it('retains no memory per batch: 100,000 batches in one generation leave the heap where it was', async () => {
    const generation = new GroupGeneration();
    for (let i = 0; i < 2_000; i++) await oneBatch(generation, i); // warm-up: code paths compiled, pools filled
    const before = heapAfterGc();
    for (let i = 0; i < 100_000; i++) await oneBatch(generation, i);
    const grownBytes = await retainedSince(before);
    // A reaction left per batch is ~600 bytes, 60 MB here; no retention is noise of well under a megabyte.
    expect(grownBytes).toBeLessThan(4 * 1024 * 1024);
    expect(generation.waiting).toBe(0);
    // The generation still ends every batch that waits on it.
    generation.supersede();
    expect(generation.over).toBe(true);
  });

  it("retains no memory per retried commit's wait", async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    try {
      const generation = new GroupGeneration();
      const run = async (n: number) => {
        for (let i = 0; i < n; i++) {
          const batch = oneRetriedBatch(generation, i);
          // The retry's delay: the batch waits on its timer or the generation's end, whichever comes first.
          await jest.advanceTimersByTimeAsync(400);
          await batch;
        }
      };
      await run(500);
      const before = heapAfterGc();
      await run(20_000);
      jest.useRealTimers();
      const grownBytes = await retainedSince(before);
      expect(grownBytes).toBeLessThan(2 * 1024 * 1024);
    } finally {
      jest.useRealTimers();
    }
  });

  it('a generation that ends releases a batch waiting on its commit', async () => {
    const generation = new GroupGeneration();
    const commits = new BatchCommits({
      offsets: ['7'],
      send: () => new Promise<void>(() => undefined), // a commit that never answers
      resolve: () => undefined,
      live: () => !generation.over,
      keepTrying: () => true,
      ends: () => false,
      generation,
      every: 100,
      lastCommitBudgetMs: 60_000,
      log,
    });
    commits.finished(0);
    const finished = commits.finish();
    let done = false;
    void finished.then(() => (done = true));
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    generation.end(new Error('REBALANCE'));
    await finished;
    expect(done).toBe(true);
  });
});
