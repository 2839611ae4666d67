/**
 * `dlq replay` with filters, as an operator uses it next to the backlog alerts: the records a replay passes over
 * (other ids, other types, older than --since, not replayable) stay counted in `dlq_consumer_lag` and the
 * oldest-age gauge, a later unfiltered replay still replays them, and no record is ever re-published twice.
 * Exactly-once is shown for the relay itself: re-published records on `.dispatch` per DLQ id, and Temporal
 * executions per workflow id — not only the runs API double's 201s, which it gives once per key by design.
 */
import path from 'node:path';
import { spawn } from 'node:child_process';
import type { Admin } from 'kafkajs';
import { dlqReplayGroup, topics, type DlqRecord } from '../src/contract';
import { EXIT } from '../src/errors';
import { watermarks } from '../src/kafka/readRange';
import { dlqBacklog } from '../src/ops/dlq';
import { type CliResult, REPO_ROOT, runCli, cliEnv } from './support/cli';
import { type Stored, deadLetter, readDeadLetterStore, republished } from './support/dlqScenario';
import { metricValue } from './support/relay';
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

let h: Harness | undefined;
let admin: Admin | undefined;
afterEach(async () => {
  await admin?.disconnect();
  admin = undefined;
  await h?.cleanup();
  h = undefined;
});

interface Summary {
  examined: number;
  replayed: number;
  filtered: number;
  notReplayable: number;
}

function json<T>(res: CliResult): T {
  if (res.code !== 0) throw new Error(`exit ${res.code}: ${res.stderr}`);
  return JSON.parse(res.stdout) as T;
}

async function replay(tenant: string, ...args: string[]): Promise<Summary> {
  return json<Summary>(
    await runCli(['dlq', 'replay', '--tenant', tenant, '--json', ...args], cliEnv(), 120_000),
  );
}

async function dlqRecords(hh: Harness): Promise<(Stored & { record: DlqRecord })[]> {
  const stored = await readDeadLetterStore(hh, topics.dlq(hh.tenant));
  return stored.map((s) => ({ ...s, record: s.record! }));
}

async function executions(hh: Harness, key: string): Promise<number> {
  let n = 0;
  for await (const _ of hh.client.workflow.list({ query: `WorkflowId = '${hh.wfId(key)}'` })) n++;
  return n;
}

/** All re-published records handled by the ingester, and each key's replayed run completed. */
async function settle(hh: Harness, keys: string[]): Promise<void> {
  await hh.expectCommittedAtLogEnd();
  for (const k of keys) {
    await waitFor(
      async () => (await hh.client.workflow.getHandle(hh.wfId(k)).describe()).status.name === 'COMPLETED',
      { what: `${k} to complete after its replay` },
    );
  }
}

/** Each key ran twice in Temporal (the dead-lettered run and one replay) and reached the API once with 201. */
async function expectReplayedOnce(hh: Harness, keys: string[]): Promise<void> {
  await settle(hh, keys);
  for (const k of keys) {
    await waitFor(async () => (await executions(hh, k)) >= 2, { what: `${k}'s executions to be listed` });
    expect({ key: k, executions: await executions(hh, k) }).toEqual({ key: k, executions: 2 });
    expect(hh.api.requestsFor(k).map((r) => r.answer)).toEqual([422, 201]);
  }
}

async function setup() {
  // Test speed: the DLQ gauges are read here, and the shipped 30 s refresh would add that wait to each read.
  h = await createHarness({ env: { POIMEN_DLQ_REFRESH_MS: '500' } });
  await h.startWorker();
  const ingester = await h.startIngester();
  admin = h.kafka.admin();
  await admin.connect();
  return { hh: h, a: admin, dlq: topics.dlq(h.tenant), ingester };
}

const ageOf = (tsMs: number) => (Date.now() - tsMs) / 1000;

describe('dlq replay with filters leaves the records it passes over counted as not yet replayed', () => {
  test('--id: the other records stay in the backlog; a later unfiltered replay replays them, none twice', async () => {
    const { hh, a, dlq } = await setup();
    await deadLetter(hh, a, ['a', 'b', 'c', 'd']);
    const recs = await dlqRecords(hh);
    const id = (k: string) => recs.find((r) => r.record.dispatch_key === k)!.record.id;

    expect(await replay(hh.tenant, '--id', id('b'), id('d'))).toMatchObject({ replayed: 2, filtered: 2 });
    const backlog = await dlqBacklog(a, dlq, Date.now());
    expect(backlog.lag).toBe(2);
    // The oldest record not yet replayed is a's (the broker's time index has second resolution).
    expect(Math.abs(backlog.oldestAgeSeconds - ageOf(recs[0]!.timestampMs))).toBeLessThan(2.5);
    await expectReplayedOnce(hh, ['b', 'd']);

    expect(await replay(hh.tenant)).toMatchObject({ replayed: 2, filtered: 0 });
    await expectReplayedOnce(hh, ['a', 'b', 'c', 'd']);
    expect(await republished(hh, a)).toEqual(Object.fromEntries(recs.map((r) => [r.record.id, 1])));
    expect(await dlqBacklog(a, dlq, Date.now())).toEqual({ lag: 0, oldestAgeSeconds: 0 });
    expect(await replay(hh.tenant)).toMatchObject({ examined: 0, replayed: 0 });
    await hh.expectCommittedAtLogEnd();
  });

  test('--type: a record of another type between replayed ones stays counted; not-replayable records stay until discarded', async () => {
    const { hh, a, dlq } = await setup();
    await deadLetter(hh, a, ['a']);
    await hh.publish('{"broken": ');
    await waitFor(async () => Number((await watermarks(a, dlq)).get(0)!.high) === 2, {
      what: 'the malformed dead letter',
    });
    await deadLetter(hh, a, ['b']);
    const recs = await dlqRecords(hh);
    expect(recs.map((r) => r.record.type)).toEqual([
      'dispatch_failure',
      'malformed_dispatch',
      'dispatch_failure',
    ]);

    expect(await replay(hh.tenant, '--type', 'dispatch_failure')).toMatchObject({ replayed: 2, filtered: 1 });
    const backlog = await dlqBacklog(a, dlq, Date.now());
    expect(backlog.lag).toBe(1);
    expect(Math.abs(backlog.oldestAgeSeconds - ageOf(recs[1]!.timestampMs))).toBeLessThan(2.5);

    // Unfiltered: the malformed record is not replayable, so it stays counted; a and b are not re-published.
    expect(await replay(hh.tenant)).toMatchObject({ examined: 1, replayed: 0, notReplayable: 1 });
    expect((await dlqBacklog(a, dlq, Date.now())).lag).toBe(1);
    await expectReplayedOnce(hh, ['a', 'b']);
    expect(await republished(hh, a)).toEqual({ [recs[0]!.record.id]: 1, [recs[2]!.record.id]: 1 });

    // The operator looked at it and fixed the producer: discarding takes it out of the backlog, publishing nothing.
    const discard = await runCli(
      ['dlq', 'discard', '--tenant', hh.tenant, '--id', recs[1]!.record.id, '--json'],
      cliEnv(),
    );
    expect(json(discard)).toMatchObject({ discarded: 1 });
    expect(await dlqBacklog(a, dlq, Date.now())).toEqual({ lag: 0, oldestAgeSeconds: 0 });
    expect(Object.keys(await republished(hh, a))).toHaveLength(2);
    await hh.expectCommittedAtLogEnd();
  });

  test('--since: older records stay counted (the 7-day alert still sees them) and are replayed later, once', async () => {
    const { hh, a, dlq, ingester } = await setup();
    await deadLetter(hh, a, ['old']);
    const cutoff = Date.now() + 1;
    await waitFor(() => Date.now() > cutoff, { intervalMs: 5 });
    await deadLetter(hh, a, ['new-1', 'new-2']);
    const recs = await dlqRecords(hh);
    expect(Date.parse(recs[0]!.record.timestamp)).toBeLessThan(cutoff);

    const since = new Date(cutoff).toISOString();
    expect(await replay(hh.tenant, '--since', since)).toMatchObject({ replayed: 2, filtered: 1 });
    // What Prometheus scrapes: one record not yet replayed, as old as the skipped one.
    await waitFor(
      async () => metricValue(await ingester.metrics(), 'dlq_consumer_lag', { topic: dlq }) === 1,
      {
        what: 'dlq_consumer_lag 1 after the filtered replay',
      },
    );
    const age = metricValue(await ingester.metrics(), 'dlq_oldest_message_age_seconds', { topic: dlq }) ?? -1;
    expect(Math.abs(age - ageOf(recs[0]!.timestampMs))).toBeLessThan(3);
    await expectReplayedOnce(hh, ['new-1', 'new-2']);

    expect(await replay(hh.tenant, '--since', since)).toMatchObject({
      examined: 1,
      replayed: 0,
      filtered: 1,
    });
    expect(await replay(hh.tenant)).toMatchObject({ examined: 1, replayed: 1 });
    await expectReplayedOnce(hh, ['old', 'new-1', 'new-2']);
    expect(await republished(hh, a)).toEqual(Object.fromEntries(recs.map((r) => [r.record.id, 1])));
    await waitFor(
      async () => metricValue(await ingester.metrics(), 'dlq_consumer_lag', { topic: dlq }) === 0,
      {
        what: 'dlq_consumer_lag 0',
      },
    );
  });
});

test('a replay killed mid-way resumes where it stopped: each dispatch runs once more, none twice', async () => {
  const { hh, a, dlq } = await setup();
  const keys = ['i-1', 'i-2', 'i-3', 'i-4', 'i-5'];
  await deadLetter(hh, a, keys);
  const progress = async () => {
    const [p] = await a.fetchOffsets({ groupId: dlqReplayGroup(hh.tenant), topics: [dlq] });
    return Number(p?.partitions[0]?.offset ?? -1);
  };
  // One record every 4 s: after the second is recorded, the third waits its turn — the kill lands there.
  const child = spawn(
    process.execPath,
    [
      path.join(REPO_ROOT, 'bin', 'poimen-relay.js'),
      'dlq',
      'replay',
      '--tenant',
      hh.tenant,
      '--rate',
      '0.25',
    ],
    { env: cliEnv(), stdio: 'ignore' },
  );
  const exited = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_c, signal) => r(signal)));
  await waitFor(async () => (await progress()) >= 2, { what: 'the replay to record two records' });
  child.kill('SIGKILL');
  // Killed, not finished: the signal ended it, and the recorded progress is short of the end.
  expect(await exited).toBe('SIGKILL');
  const atKill = await progress();
  expect(atKill).toBeGreaterThanOrEqual(2);
  expect(atKill).toBeLessThan(keys.length);
  expect(Object.keys(await republished(hh, a)).length).toBeLessThan(keys.length);

  // The killed run's membership stands until its session times out: a run before then refuses (exit 6).
  const rerun = await waitFor(
    async () => {
      const res = await runCli(['dlq', 'replay', '--tenant', hh.tenant, '--json'], cliEnv(), 120_000);
      return res.code === EXIT.busy ? false : json<Summary>(res);
    },
    { what: 'a replay to be accepted after the killed one', intervalMs: 500 },
  );
  expect(rerun.replayed).toBe(keys.length - atKill);
  await expectReplayedOnce(hh, keys);
  // A record sent but not yet recorded when the kill came is re-published once more: at most one such.
  const counts = Object.values(await republished(hh, a));
  expect(counts).toHaveLength(keys.length);
  expect(counts.filter((c) => c > 1).length).toBeLessThanOrEqual(1);
  expect(await progress()).toBe(keys.length);
});
