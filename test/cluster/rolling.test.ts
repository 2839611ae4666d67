/**
 * The relay's own processes change under load: a rolling restart (SIGTERM, one at a time, the replacement
 * ready before the next goes) of the ingesters and then of the workers, and a consumer-group rebalance as a
 * third ingester joins and one leaves. Each hand-over of partitions must neither lose a dispatch nor start a
 * second run, and the group ends at the log end.
 */
import type { RelayProcess } from '../support/relay';
import {
  type Topology,
  afterPublished,
  clusterStack,
  expectExactlyOnce,
  midStream,
  startTopology,
  streamDispatches,
} from './support/topology';

clusterStack();
let t: Topology;

beforeAll(async () => {
  t = await startTopology();
});

afterAll(async () => {
  await t?.cleanup();
});

/** SIGTERM one, start its replacement, and only then the next: a Deployment's rolling update, maxUnavailable 1. */
async function rollingRestart(
  list: RelayProcess[],
  start: (label: string) => Promise<RelayProcess>,
  label: string,
) {
  for (let i = 0; i < list.length; i++) {
    const code = await list[i]!.stop();
    expect(code).toBe(0);
    list[i] = await start(`${label}-${i}-rolled`);
  }
}

test('rolling restart of the ingesters, then of the workers, while records flow: nothing lost, nothing doubled', async () => {
  const s = streamDispatches(t.h, 'rolling');
  await afterPublished(s, 100);
  await midStream(s, () => rollingRestart(t.ingesters, (l) => t.h.startIngester(l), 'ingest'));
  await afterPublished(s, s.published() + 100);
  await midStream(s, () => rollingRestart(t.workers, (l) => t.h.startWorker(l), 'worker'));
  await afterPublished(s, s.published() + 100);
  const keys = await s.stop();
  const account = await expectExactlyOnce(t, keys);
  process.stderr.write(`[cluster] rolling restarts: ${keys.length} runs, ${account.conflicts} 409s\n`);
});

test('a third ingester joins and one leaves under load (two rebalances): nothing lost, nothing doubled', async () => {
  const s = streamDispatches(t.h, 'rebalance');
  await afterPublished(s, 120);
  let third: RelayProcess | undefined;
  await midStream(s, async () => {
    third = await t.h.startIngester('ingest-third');
  });
  await afterPublished(s, s.published() + 150);
  const leaving = t.ingesters.shift()!;
  await midStream(s, async () => expect(await leaving.stop()).toBe(0));
  t.ingesters.push(third!);
  await afterPublished(s, s.published() + 100);
  const keys = await s.stop();
  const account = await expectExactlyOnce(t, keys);
  process.stderr.write(`[cluster] join and leave: ${keys.length} runs, ${account.conflicts} 409s\n`);
});
