/**
 * The real Temporal server (8 history shards) on PostgreSQL dies by kill -9 while dispatches flow; later its
 * database does. Ingesters hold their offsets while Temporal cannot take a start, workers' polls and
 * completions fail and come back, the shards are reacquired: nothing lost, no second run, one execution per
 * dispatch, offsets at the log end.
 */
import {
  type Topology,
  afterPublished,
  clusterStack,
  expectExactlyOnce,
  startTopology,
  streamDispatches,
} from './support/topology';

const stack = clusterStack();
let t: Topology;

beforeAll(async () => {
  t = await startTopology();
});

afterAll(async () => {
  await t?.cleanup();
  await stack.startServices(['postgres', 'temporal']);
});

test('kill -9 the Temporal server mid-stream and restart it: nothing lost, nothing doubled, offsets at the log end', async () => {
  const s = streamDispatches(t.h, 'temporal-kill', 500);
  await afterPublished(s, 150);
  await stack.stopService('temporal', 'SIGKILL');
  await afterPublished(s, 300);
  await stack.startService('temporal');
  await s.done;
  const account = await expectExactlyOnce(t, s.keys);
  process.stderr.write(
    `[cluster] Temporal server killed: ${s.keys.length} runs, ${account.conflicts} 409s\n`,
  );
});

test('kill -9 PostgreSQL mid-stream and restart it: nothing lost, nothing doubled, offsets at the log end', async () => {
  const s = streamDispatches(t.h, 'postgres-kill', 500);
  await afterPublished(s, 150);
  // The whole process group: the postmaster and every backend, as an OOM kill of the database host would.
  await stack.stopService('postgres', 'SIGKILL');
  await afterPublished(s, 300);
  await stack.startService('postgres');
  await s.done;
  const account = await expectExactlyOnce(t, s.keys);
  process.stderr.write(`[cluster] PostgreSQL killed: ${s.keys.length} runs, ${account.conflicts} 409s\n`);
});
