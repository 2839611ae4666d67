/**
 * The shipped worker manifest's memory limit holds under the worst burst the relay accepts: a backlog of
 * dispatches just under DISPATCH_MAX_BYTES, the runs API slow to answer, and small dispatches mixed in. The
 * worker runs in a memory cgroup of exactly deploy/k8s's limit (read from the manifest, so they cannot drift),
 * with the manifest's heap flags and default settings; the kernel's OOM killer is the judge.
 */
import { topics } from '../src/contract';
import {
  type CgroupProcess,
  type MemoryCgroup,
  createMemoryCgroup,
  manifestMemoryLimitBytes,
  startInCgroup,
} from './support/memoryCgroup';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

const LARGE = 150;
const SMALL = 20;
/** Under DISPATCH_MAX_BYTES (1 MiB) and the broker's default message size. */
const RECORD_BYTES = 1_000_000;
const API_DELAY_MS = 4_000;
const MiB = 1024 * 1024;

function stringInput(key: string, bytes: number): Buffer {
  const head = `{"workflow_ref":"big@v1","goal_id":null,"dispatch_key":"${key}","input":"`;
  return Buffer.from(`${head}${'x'.repeat(bytes - head.length - 2)}"}`);
}

describe('worker memory under the manifest limit', () => {
  let h: Harness | undefined;
  let cg: MemoryCgroup | undefined;
  let worker: CgroupProcess | undefined;

  afterAll(async () => {
    await worker?.kill();
    await h?.cleanup();
    cg?.remove();
  });

  it(`${LARGE} dispatches of ~1 MiB waiting on a slow API, with small ones mixed in: the worker stays within deploy/k8s's memory limit, is not OOM-killed, and relays every dispatch once`, async () => {
    const limit = manifestMemoryLimitBytes('worker-deployment.yaml');
    cg = createMemoryCgroup(limit);
    // Calls queue behind the slow API's answers; at the shipped 10 s the queued ones would time out.
    h = await createHarness({ partitions: 4, env: { RUNS_API_TIMEOUT_MS: '30000' } });
    const t = h;
    t.api.always({ kind: 'delay', ms: API_DELAY_MS });
    const large = Array.from({ length: LARGE }, (_, i) => `large-${i}`);
    const small = Array.from({ length: SMALL }, (_, i) => `small-${i}`);
    await t.startIngester();
    // One record per produce request (each is near the broker's 1 MB message limit); small ones interleaved.
    const every = Math.floor(LARGE / SMALL);
    for (const [i, key] of large.entries()) {
      const smallKey = i % every === 0 ? small[i / every] : undefined;
      await t.producer.send({
        topic: topics.dispatch(t.tenant),
        acks: -1,
        messages: [
          { partition: i % 4, value: stringInput(key, RECORD_BYTES) },
          ...(smallKey ? [{ partition: i % 4, value: t.dispatchValue(smallKey) }] : []),
        ],
      });
    }
    // Every dispatch started before any worker runs: the worker meets the whole burst at once, as after a
    // deploy or an outage of the runs API, whatever pace the ingester keeps.
    await t.expectCommittedAtLogEnd(300_000);
    expect(t.api.requests.length).toBe(0);

    const w = await startInCgroup(cg, 'worker', t.env, `${t.tenant}-worker-cgroup`);
    worker = w;
    // The cgroup's own peak counts page cache the kernel reclaims before it would kill; the process's anonymous
    // memory (what the OOM killer weighs) is sampled as well.
    let anonPeak = 0;
    const gone = () => w.child.exitCode !== null || w.child.signalCode !== null;
    await waitFor(
      () => {
        if (!gone()) anonPeak = Math.max(anonPeak, cg!.anonBytes());
        return [...large, ...small].every((k) => t.api.runs.has(k)) || gone();
      },
      { timeoutMs: 480_000, intervalMs: 250, what: 'every dispatch to have a run (or the worker to die)' },
    );
    process.stderr.write(
      `[worker memory] cgroup v${cg.version}, limit ${limit / MiB} MiB: peak usage ${Math.round(cg.peakBytes() / MiB)} MiB, ` +
        `peak anonymous ${Math.round(anonPeak / MiB)} MiB (sampled), oom_kill ${cg.oomKills()}, ` +
        `${[...large, ...small].filter((k) => t.api.runs.has(k)).length}/${LARGE + SMALL} dispatches relayed\n`,
    );
    expect({ oomKills: cg.oomKills(), exit: w.child.exitCode, signal: w.child.signalCode }).toEqual({
      oomKills: 0,
      exit: null,
      signal: null,
    });
    expect([...large, ...small].filter((k) => t.api.requestsFor(k).length !== 1)).toEqual([]);
    // Large inputs' calls took the large-input queue (few slots); small ones stayed on the main queue.
    const scheduledOn = async (key: string) => {
      const history = await t.client.workflow.getHandle(t.wfId(key)).fetchHistory();
      const queues = (history.events ?? []).flatMap((e) =>
        e.activityTaskScheduledEventAttributes
          ? [e.activityTaskScheduledEventAttributes.taskQueue?.name]
          : [],
      );
      return queues;
    };
    expect(await scheduledOn('large-0')).toEqual([`${t.taskQueue}-large`]);
    expect(await scheduledOn('small-0')).toEqual([t.taskQueue]);
    await waitFor(async () => (await fetch(`http://127.0.0.1:${w.metricsPort}/healthz`)).ok, {
      what: 'worker healthy',
    });
  }, 900_000);
});
