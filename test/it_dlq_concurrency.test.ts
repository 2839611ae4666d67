/**
 * DLQ commands run side by side, as operators of many tenants run them: `dlq replay` for two tenants at once both
 * finish; a second run for a tenant whose dead letters another run is working on refuses at once in one line
 * (nothing re-published twice); a run SIGKILLed mid-way blocks the next one no longer than the bound its refusal
 * states, and the next run re-publishes nothing twice (at most the one record sent but not yet recorded when the
 * kill came, which the ingester absorbs: one more run per dispatch, never two); the progress an older relay kept in
 * the group all tenants shared is honoured. On the real broker; the CLI runs as a process.
 */
import crypto from 'node:crypto';
import { type Admin, Kafka, logLevel } from 'kafkajs';
import { SHARED_DLQ_REPLAY_GROUP, buildDlqRecord, dlqReplayGroup, topics } from '../src/contract';
import { BusyError, EXIT } from '../src/errors';
import { refuseIfBusy } from '../src/ops/dlqExclusive';
import { ensureTopics, tenantTopicSpecs } from '../src/kafka/topics';
import { readRange, watermarks } from '../src/kafka/readRange';
import { type ReplaySummary, dlqBacklog } from '../src/ops/dlq';
import { type CliResult, cliEnv, runCli, startCli } from './support/cli';
import { deadLetter, republished } from './support/dlqScenario';
import { uniqueName, uniqueTenant } from './support/names';
import { type Harness, createHarness } from './support/relayHarness';
import { testServices } from './support/testEnv';
import { waitFor } from './support/wait';

jest.setTimeout(300_000);

/** Longer than any run here takes when it works: a run still going by then hangs, and is SIGKILLed. */
const HANG_MS = 90_000;
const PARTITIONS = 4;

let kafka: Kafka;
let admin: Admin;
let h: Harness | undefined;
const made: string[] = [];

beforeAll(async () => {
  kafka = new Kafka({ brokers: testServices().kafkaBrokers, logLevel: logLevel.NOTHING });
  admin = kafka.admin();
  await admin.connect();
});
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
  const existing = new Set(await admin.listTopics());
  const mine = made.flatMap((t) => [topics.dispatch(t), topics.events(t), topics.dlq(t)]);
  if (mine.some((t) => existing.has(t)))
    await admin.deleteTopics({ topics: mine.filter((t) => existing.has(t)) });
  made.length = 0;
});
afterAll(async () => {
  await admin.disconnect();
});

/** A tenant with `count` dead letters spread over its DLQ topic's partitions; their ids. */
async function tenantWithDeadLetters(count: number): Promise<{ tenant: string; ids: string[] }> {
  const tenant = uniqueTenant();
  made.push(tenant);
  await ensureTopics(admin, tenantTopicSpecs(tenant, { partitions: PARTITIONS }));
  const producer = kafka.producer();
  await producer.connect();
  const ids: string[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const key = `k-${i}`;
      const record = buildDlqRecord({
        id: crypto.randomUUID(),
        timestamp: Date.now(),
        type: 'dispatch_failure',
        tenant,
        dispatchKey: key,
        error: 'runs API answered 422',
        httpStatus: 422,
        source: {
          topic: topics.dispatch(tenant),
          partition: 0,
          offset: String(i),
          timestamp: String(Date.now()),
        },
        value: JSON.stringify({ dispatch_key: key }),
      });
      ids.push(record.id);
      await producer.send({
        topic: topics.dlq(tenant),
        messages: [{ partition: i % PARTITIONS, value: JSON.stringify(record) }],
      });
    }
  } finally {
    await producer.disconnect();
  }
  return { tenant, ids };
}

/** DLQ ids re-published to the tenant's `.dispatch` (header `poimen-replay-of`), with how often. */
async function republishedCounts(tenant: string): Promise<Record<string, number>> {
  const topic = topics.dispatch(tenant);
  const marks = await watermarks(admin, topic);
  const counts: Record<string, number> = {};
  await readRange(kafka, admin, {
    topic,
    groupId: uniqueName('it-dlq-concurrency-read'),
    ranges: [...marks].map(([partition, { low, high }]) => ({ partition, start: low, end: high })),
    commit: false,
    timeoutMs: 60_000,
    onMessage: async (_p, m) => {
      const of = m.headers?.['poimen-replay-of']?.toString();
      if (of) counts[of] = (counts[of] ?? 0) + 1;
    },
  });
  return counts;
}

const replayArgs = (tenant: string, ...args: string[]) => [
  'dlq',
  'replay',
  '--tenant',
  tenant,
  '--json',
  ...args,
];

function summaryOf(res: CliResult): ReplaySummary {
  if (res.code !== 0) throw new Error(`exit ${res.code}: ${res.stderr}`);
  return JSON.parse(res.stdout) as ReplaySummary;
}

const REFUSAL =
  /another dlq command is working on tenant (\S+)'s dead letters \(member [^)]+\); retry when it ends, or after (\d+) s if it was killed/;

test('dlq replay for two tenants at once: both finish, each re-publishing its own dead letters once', async () => {
  const a = await tenantWithDeadLetters(8);
  const b = await tenantWithDeadLetters(8);
  // Paced so the two runs are in their groups at the same time.
  const runs = [a, b].map((t) => runCli(replayArgs(t.tenant, '--rate', '4'), cliEnv(), HANG_MS));
  const [ra, rb] = await Promise.all(runs);
  expect({ code: ra!.code, stderr: ra!.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
  expect({ code: rb!.code, stderr: rb!.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
  expect(summaryOf(ra!).replayed).toBe(a.ids.length);
  expect(summaryOf(rb!).replayed).toBe(b.ids.length);
  for (const t of [a, b])
    expect(await republishedCounts(t.tenant)).toEqual(Object.fromEntries(t.ids.map((id) => [id, 1])));
});

test('a second dlq replay for the same tenant refuses at once in one line; no dead letter is re-published twice', async () => {
  const t = await tenantWithDeadLetters(8);
  // 2 s per record: the first run is still at work while the second starts.
  const first = startCli(replayArgs(t.tenant, '--rate', '0.5'), cliEnv(), HANG_MS);
  await waitFor(async () => Object.keys(await republishedCounts(t.tenant)).length >= 1, {
    what: 'the first run to re-publish a record',
  });
  const second = await runCli(replayArgs(t.tenant), cliEnv(), HANG_MS);
  const done = await first.result;

  expect(summaryOf(done).replayed).toBe(t.ids.length);
  expect(second.code).toBe(EXIT.busy);
  expect(second.stdout).toBe('');
  expect(second.stderr.trim().split('\n')).toHaveLength(1);
  expect(second.stderr).toMatch(REFUSAL);
  expect(REFUSAL.exec(second.stderr)![1]).toBe(t.tenant);
  expect(await republishedCounts(t.tenant)).toEqual(Object.fromEntries(t.ids.map((id) => [id, 1])));
  // Nothing left: the refused run recorded nothing, the first recorded everything.
  expect(summaryOf(await runCli(replayArgs(t.tenant), cliEnv(), HANG_MS))).toMatchObject({
    examined: 0,
    replayed: 0,
  });
});

test('a replay SIGKILLed mid-way blocks the next one no longer than the bound it states; nothing runs twice', async () => {
  h = await createHarness({});
  const hh = h;
  await hh.startWorker();
  await hh.startIngester();
  const keys = ['k-1', 'k-2', 'k-3', 'k-4', 'k-5'];
  await deadLetter(hh, admin, keys);
  // One record every 4 s: the kill lands while the third waits its turn.
  const killed = startCli(['dlq', 'replay', '--tenant', hh.tenant, '--rate', '0.25'], cliEnv(), HANG_MS);
  await waitFor(async () => Object.keys(await republished(hh, admin)).length >= 2, {
    what: 'the replay to re-publish two records',
  });
  killed.child.kill('SIGKILL');
  await killed.result;
  const killedAt = Date.now();

  // At once, with no process start in between (a loaded machine can take seconds to start one): the killed run's
  // membership still stands, and a DLQ command refuses. test 2 shows the CLI's exit code and line.
  const refusal = await refuseIfBusy(admin, hh.tenant).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(refusal).toBeInstanceOf(BusyError);
  expect((refusal as Error).message).toMatch(REFUSAL);
  const boundMs = Number(REFUSAL.exec((refusal as Error).message)![2]) * 1000;

  // Until one is accepted: no attempt started after the bound is refused.
  const attempts: { startedAt: number; code: number | null }[] = [];
  let rerun: CliResult | undefined;
  await waitFor(
    async () => {
      const startedAt = Date.now();
      rerun = await runCli(replayArgs(hh.tenant), cliEnv(), HANG_MS);
      attempts.push({ startedAt: startedAt - killedAt, code: rerun.code });
      return rerun.code !== EXIT.busy;
    },
    { what: 'a replay to be accepted after the killed one', timeoutMs: boundMs + HANG_MS, intervalMs: 500 },
  );
  expect({ code: rerun!.code, stderr: rerun!.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
  expect(attempts.filter((a) => a.code === EXIT.busy && a.startedAt >= boundMs)).toEqual([]);

  // The ingester has handled everything; each dispatch ran once more than its dead-lettered run, none twice.
  // The ingester has handled every re-published record (and posted none of them twice).
  await hh.expectCommittedAtLogEnd();
  for (const k of keys) {
    await waitFor(
      async () => (await hh.client.workflow.getHandle(hh.wfId(k)).describe()).status.name === 'COMPLETED',
      { what: `${k} to complete after its replay` },
    );
    let runs = 0;
    for await (const _ of hh.client.workflow.list({ query: `WorkflowId = '${hh.wfId(k)}'` })) runs++;
    expect({ key: k, runs }).toEqual({ key: k, runs: 2 });
    expect(hh.api.requestsFor(k).map((r) => r.answer)).toEqual([422, 201]);
  }
  // At-least-once at the kill: the one record sent but not yet recorded is re-published again, no other.
  const counts = Object.values(await republished(hh, admin));
  expect(counts).toHaveLength(keys.length);
  expect(counts.filter((c) => c > 1).length).toBeLessThanOrEqual(1);
  expect(summaryOf(await runCli(replayArgs(hh.tenant), cliEnv(), HANG_MS))).toMatchObject({ examined: 0 });
});

test('progress recorded in the group all tenants once shared is honoured until the tenant’s own group has its commit', async () => {
  const t = await tenantWithDeadLetters(2 * PARTITIONS);
  const dlq = topics.dlq(t.tenant);
  const shared = (offset: number) =>
    admin.setOffsets({
      groupId: SHARED_DLQ_REPLAY_GROUP,
      topic: dlq,
      partitions: Array.from({ length: PARTITIONS }, (_, partition) => ({
        partition,
        offset: String(offset),
      })),
    });
  // An earlier replay handled the first record of every partition, under the shared group.
  await shared(1);
  expect((await dlqBacklog(admin, dlq, Date.now())).lag).toBe(PARTITIONS);
  expect(summaryOf(await runCli(replayArgs(t.tenant), cliEnv(), HANG_MS))).toMatchObject({
    examined: PARTITIONS,
    replayed: PARTITIONS,
  });
  const second = t.ids.slice(PARTITIONS);
  expect(await republishedCounts(t.tenant)).toEqual(Object.fromEntries(second.map((id) => [id, 1])));
  // From now on the tenant's own group decides: the shared group's commits no longer count.
  await shared(0);
  expect(summaryOf(await runCli(replayArgs(t.tenant), cliEnv(), HANG_MS))).toMatchObject({ examined: 0 });
  expect(await dlqBacklog(admin, dlq, Date.now())).toEqual({ lag: 0, oldestAgeSeconds: 0 });
  const [own] = await admin.fetchOffsets({ groupId: dlqReplayGroup(t.tenant), topics: [dlq] });
  expect(own!.partitions.map((p) => p.offset).sort()).toEqual(Array(PARTITIONS).fill('2'));
});
