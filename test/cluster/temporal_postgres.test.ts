/**
 * The real Temporal server (8 history shards) on PostgreSQL dies by kill -9 while dispatches flow; later its
 * database does. Ingesters hold their offsets while Temporal cannot take a start, workers' polls and
 * completions fail and come back, the shards are reacquired: nothing lost, no second run, one execution per
 * dispatch, offsets at the log end. And its PostgreSQL visibility answers the query admission uses for a lone
 * tenant's closes (src/temporal/visibilityCloses.ts).
 */
import {
  type Topology,
  afterPublished,
  clusterStack,
  expectExactlyOnce,
  midStream,
  restoreCluster,
  startTopology,
  streamDispatches,
} from './support/topology';
import { listClosed } from '../../src/temporal/closedRuns';
import { VisibilityCloses } from '../../src/temporal/visibilityCloses';
import { visibilityStore } from '../../src/temporal/visibilityStore';
import { waitFor } from '../support/wait';

const stack = clusterStack();
let t: Topology;

beforeAll(async () => {
  t = await startTopology();
});

afterEach(async () => {
  await restoreCluster(stack);
});

afterAll(async () => {
  await t?.cleanup();
});

test('kill -9 the Temporal server mid-stream and restart it: nothing lost, nothing doubled, offsets at the log end', async () => {
  const s = streamDispatches(t.h, 'temporal-kill');
  await afterPublished(s, 150);
  await midStream(s, () => stack.stopService('temporal', 'SIGKILL'));
  await afterPublished(s, s.published() + 150);
  await stack.startService('temporal');
  await afterPublished(s, s.published() + 100);
  const keys = await s.stop();
  // A 409 is a call repeated because its completion died with the server: the API's dedup absorbs it.
  const account = await expectExactlyOnce(t, keys, {
    lostCompletions: 'completions died with the Temporal server',
  });
  process.stderr.write(`[cluster] Temporal server killed: ${keys.length} runs, ${account.conflicts} 409s\n`);
});

test('kill -9 PostgreSQL mid-stream and restart it: nothing lost, nothing doubled, offsets at the log end', async () => {
  const s = streamDispatches(t.h, 'postgres-kill');
  await afterPublished(s, 150);
  // The postmaster's process group. Its backends left that group (setsid) and exit once they see the postmaster
  // gone; the restart waits for any still working in the data folder (processes.ts clearLeftovers).
  await midStream(s, () => stack.stopService('postgres', 'SIGKILL'));
  await afterPublished(s, s.published() + 150);
  await stack.startService('postgres');
  await afterPublished(s, s.published() + 100);
  const keys = await s.stop();
  const account = await expectExactlyOnce(t, keys, { lostCompletions: 'completions died with PostgreSQL' });
  process.stderr.write(`[cluster] PostgreSQL killed: ${keys.length} runs, ${account.conflicts} 409s\n`);
});

test("PostgreSQL visibility answers the query admission uses for a lone tenant's closes; nothing is handed over", async () => {
  const keys = ['visibility-1', 'visibility-2', 'visibility-3'];
  for (const k of keys) await t.h.publish(t.h.dispatchValue(k));
  const runs: [string, string][] = [];
  for (const k of keys) {
    const handle = t.h.client.workflow.getHandle(t.h.wfId(k));
    await waitFor(() => handle.describe().then(() => true), { timeoutMs: 60_000, what: `${k} to start` });
    await handle.result();
    runs.push([t.h.wfId(k), (await handle.describe()).runId]);
  }
  const handedOver: string[] = [];
  const closes = new VisibilityCloses({
    list: (query, token) => listClosed(t.h.client, query, token),
    watchOne: async (workflowId) => (handedOver.push(workflowId), true),
    intervalMs: 100,
    handOverMs: 60_000,
  });
  const signal = new AbortController().signal;
  await expect(Promise.all(runs.map(([id, run]) => closes.watch(id, run, signal)))).resolves.toEqual([
    true,
    true,
    true,
  ]);
  expect(handedOver).toEqual([]);
  // The shipped ingester asks it here: PostgreSQL answers from an index (the dev server's SQLite does not).
  await expect(visibilityStore(t.h.client)()).resolves.toMatchObject({
    indexed: true,
    store: expect.stringMatching(/^postgres/),
  });
});
