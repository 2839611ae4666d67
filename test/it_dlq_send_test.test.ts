/**
 * `dlq send-test`, and what the other DLQ commands do with its records, on the real broker and Temporal dev
 * server: the test dead letters are contract §6 records marked by the `poimen-test` header, written through the
 * relay's DLQ publisher; `dlq list` shows them as tests; `dlq replay` never re-publishes them (not even with
 * --force) and says how many it passed over; `dlq purge-tests` takes exactly them out of the backlog the gauges
 * count, leaving every real dead letter pending; bad arguments are one line and exit 2.
 */
import { type Admin, Kafka, logLevel } from 'kafkajs';
import { DLQ_TYPES, type DlqRecord, topics } from '../src/contract';
import { ensureTopics, tenantTopicSpecs } from '../src/kafka/topics';
import { watermarks } from '../src/kafka/readRange';
import { type ReplaySummary, dlqBacklog } from '../src/ops/dlq';
import { type CliResult, cliEnv, runCli } from './support/cli';
import { deadLetter, readDeadLetterStore, republished } from './support/dlqScenario';
import { uniqueTenant } from './support/names';
import { metricValue } from './support/relay';
import { type Harness, createHarness } from './support/relayHarness';
import { testServices } from './support/testEnv';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

let h: Harness | undefined;
let admin: Admin | undefined;
/** Tenants whose topics this file made: deleted afterwards, so the shared broker keeps no leftovers. */
const made: string[] = [];
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
  if (admin && made.length > 0) {
    const existing = new Set(await admin.listTopics());
    const mine = made.flatMap((t) => [topics.dispatch(t), topics.events(t), topics.dlq(t)]);
    await admin.deleteTopics({ topics: mine.filter((t) => existing.has(t)) });
  }
  made.length = 0;
  await admin?.disconnect();
  admin = undefined;
});

const cli = (args: string[]): Promise<CliResult> => runCli(args, cliEnv(), 120_000);

function json<T>(res: CliResult): T {
  if (res.code !== 0) throw new Error(`exit ${res.code}: ${res.stderr}`);
  return JSON.parse(res.stdout) as T;
}

const sendTest = async (tenant: string, count: number) =>
  json<{ topic: string; published: number; ids: string[] }>(
    await cli(['dlq', 'send-test', '--tenant', tenant, '--count', String(count), '--json']),
  );
const replay = async (tenant: string, ...args: string[]) =>
  json<ReplaySummary>(await cli(['dlq', 'replay', '--tenant', tenant, '--json', ...args]));
const purgeTests = async (tenant: string, ...args: string[]) =>
  json<ReplaySummary>(await cli(['dlq', 'purge-tests', '--tenant', tenant, '--json', ...args]));

async function setup() {
  // Test speed: the DLQ gauges are read here, and the shipped 30 s refresh would add that wait to each read.
  h = await createHarness({ env: { POIMEN_DLQ_REFRESH_MS: '500' } });
  made.push(h.tenant);
  await h.startWorker();
  const ingester = await h.startIngester();
  admin = h.kafka.admin();
  await admin.connect();
  return { hh: h, a: admin, dlq: topics.dlq(h.tenant), ingester };
}

/** Each key's replay went through: the run completed, and the API saw the refusal and then one success. */
async function expectReplayedOnce(hh: Harness, keys: string[]): Promise<void> {
  await hh.expectCommittedAtLogEnd();
  for (const k of keys) {
    await waitFor(
      async () => (await hh.client.workflow.getHandle(hh.wfId(k)).describe()).status.name === 'COMPLETED',
      { what: `${k} to complete after its replay` },
    );
    expect({ key: k, answers: hh.api.requestsFor(k).map((r) => r.answer) }).toEqual({
      key: k,
      answers: [422, 201],
    });
  }
}

const SPEC_FIELDS = [
  'id',
  'type',
  'tenant_id',
  'dispatch_key',
  'workflow_id',
  'run_id',
  'error',
  'http_status',
  'timestamp',
  'retry_count',
  'max_retries',
  'topic',
  'target_url',
  'source',
  'payload',
].sort();

test('send-test publishes N marked, §6-valid dead letters; dlq list shows them as tests; the backlog gauges count them', async () => {
  const { hh, a, dlq, ingester } = await setup();
  const sent = await sendTest(hh.tenant, 3);
  expect(sent).toEqual({
    topic: dlq,
    published: 3,
    ids: [expect.any(String), expect.any(String), expect.any(String)],
  });
  expect(new Set(sent.ids).size).toBe(3);

  const stored = await readDeadLetterStore(hh, dlq);
  expect(stored.map((s) => s.record?.id)).toEqual(sent.ids);
  for (const [i, s] of stored.entries()) {
    // The mark is a header; the value keeps to §6: its fields only, a §6 type, nothing to replay.
    expect(s.headers).toEqual({ 'poimen-test': '1', 'dlq-type': 'malformed_dispatch' });
    const raw = JSON.parse(JSON.stringify(s.record)) as Record<string, unknown>;
    expect(Object.keys(raw).sort()).toEqual(SPEC_FIELDS);
    expect(DLQ_TYPES).toContain(s.record!.type);
    expect(s.record).toMatchObject({
      type: 'malformed_dispatch',
      tenant_id: hh.tenant,
      dispatch_key: null,
      workflow_id: null,
      run_id: null,
      topic: dlq,
      payload: null,
      source: {
        topic: topics.dispatch(hh.tenant),
        partition: -1,
        offset: '-1',
        headers: { 'poimen-test': '1' },
      },
    });
    expect(s.record!.error).toMatch(new RegExp(`^test dead letter ${i + 1}/3 .*dlq send-test`));
  }

  const listed = json<{ offset: string; test: boolean; record: DlqRecord }[]>(
    await cli(['dlq', 'list', '--tenant', hh.tenant, '--json']),
  );
  expect(listed.map((e) => [e.record.id, e.test])).toEqual(sent.ids.map((id) => [id, true]));
  const text = await cli(['dlq', 'list', '--tenant', hh.tenant]);
  expect(text.code).toBe(0);
  const lines = text.stdout.trim().split('\n');
  expect(lines).toHaveLength(3);
  for (const [i, id] of sent.ids.entries()) expect(lines[i]).toMatch(new RegExp(`^${id} +test +key null `));
  expect(text.stderr).toMatch(/3 dead letter\(s\) shown, 3 of them test/);

  // Counted until purged: what the DLQ alerts see (docs/operations.md, "Test the DLQ pipeline").
  await waitFor(async () => metricValue(await ingester.metrics(), 'dlq_consumer_lag', { topic: dlq }) === 3, {
    what: 'dlq_consumer_lag 3 after send-test',
  });
  const age = metricValue(await ingester.metrics(), 'dlq_oldest_message_age_seconds', { topic: dlq });
  expect(age).toBeGreaterThanOrEqual(0);
  expect(await dlqBacklog(a, dlq, Date.now())).toMatchObject({ lag: 3 });
});

test('replay of real and test dead letters re-publishes only the real ones, --force included, and reports the tests it skipped', async () => {
  const { hh, a, dlq } = await setup();
  await deadLetter(hh, a, ['real-a']);
  const sent = await sendTest(hh.tenant, 2);
  await deadLetter(hh, a, ['real-b']);
  const stored = await readDeadLetterStore(hh, dlq);
  const realIds = stored.filter((s) => !sent.ids.includes(s.record!.id)).map((s) => s.record!.id);
  expect(realIds).toHaveLength(2);

  const dry = await replay(hh.tenant, '--dry-run');
  expect(dry).toMatchObject({ examined: 4, wouldReplay: 2, tests: 2 });
  expect(dry.records!.map((r) => [r.id, r.test])).toEqual(realIds.map((id) => [id, false]));

  expect(await replay(hh.tenant)).toMatchObject({ examined: 4, replayed: 2, tests: 2, notReplayable: 0 });
  await expectReplayedOnce(hh, ['real-a', 'real-b']);
  expect(await republished(hh, a)).toEqual(Object.fromEntries(realIds.map((id) => [id, 1])));

  // Test dead letters are malformed_dispatch by type; forcing that type still never re-publishes them.
  expect(await replay(hh.tenant, '--type', 'malformed_dispatch', '--force')).toMatchObject({
    examined: 2,
    replayed: 0,
    tests: 2,
  });
  const text = await cli(['dlq', 'replay', '--tenant', hh.tenant]);
  expect(text.code).toBe(0);
  expect(text.stdout).toMatch(
    /^examined 2: replayed 0, .*; skipped 2 test dead letter\(s\) .*dlq purge-tests/,
  );
  expect(await republished(hh, a)).toEqual(Object.fromEntries(realIds.map((id) => [id, 1])));
  // Passed over, not handled: the tests stay in the backlog until purged.
  expect((await dlqBacklog(a, dlq, Date.now())).lag).toBe(2);
  await hh.expectCommittedAtLogEnd();
});

test('purge-tests lowers the backlog by exactly the test dead letters; the real ones stay pending and replay later', async () => {
  const { hh, a, dlq, ingester } = await setup();
  // Real, test, test, real, test: the tests lie between and after records still pending.
  await deadLetter(hh, a, ['keep-1']);
  const first = await sendTest(hh.tenant, 2);
  await deadLetter(hh, a, ['keep-2']);
  const second = await sendTest(hh.tenant, 1);
  const stored = await readDeadLetterStore(hh, dlq);
  expect(stored).toHaveLength(5);
  const oldestRealMs = Date.parse(stored[0]!.record!.timestamp);
  await waitFor(async () => metricValue(await ingester.metrics(), 'dlq_consumer_lag', { topic: dlq }) === 5, {
    what: 'dlq_consumer_lag 5',
  });

  const dry = await purgeTests(hh.tenant, '--dry-run');
  expect(dry).toMatchObject({ examined: 5, discarded: 3, tests: 3, filtered: 2 });
  expect(dry.records!.map((r) => r.id)).toEqual([...first.ids, ...second.ids]);
  expect((await dlqBacklog(a, dlq, Date.now())).lag).toBe(5);

  expect(await purgeTests(hh.tenant)).toMatchObject({ examined: 5, discarded: 3, tests: 3, filtered: 2 });
  const backlog = await dlqBacklog(a, dlq, Date.now());
  expect(backlog.lag).toBe(2);
  // The oldest pending record is still keep-1's (the broker's time index has second resolution).
  expect(Math.abs(backlog.oldestAgeSeconds - (Date.now() - oldestRealMs) / 1000)).toBeLessThan(2.5);
  await waitFor(async () => metricValue(await ingester.metrics(), 'dlq_consumer_lag', { topic: dlq }) === 2, {
    what: 'dlq_consumer_lag 2 after purge-tests',
  });
  // Nothing was re-published, and the records stay readable.
  expect(await republished(hh, a)).toEqual({});
  const listed = json<{ test: boolean }[]>(await cli(['dlq', 'list', '--tenant', hh.tenant, '--json']));
  expect(listed.map((e) => e.test)).toEqual([false, true, true, false, true]);

  const again = await cli(['dlq', 'purge-tests', '--tenant', hh.tenant]);
  expect(again.code).toBe(0);
  expect(again.stdout).toMatch(
    /^examined 2: purged 0 test dead letter\(s\); 2 other record\(s\) left in the backlog/,
  );

  expect(await replay(hh.tenant)).toMatchObject({ examined: 2, replayed: 2, tests: 0, alreadyHandled: 3 });
  await expectReplayedOnce(hh, ['keep-1', 'keep-2']);
  expect(await dlqBacklog(a, dlq, Date.now())).toEqual({ lag: 0, oldestAgeSeconds: 0 });
  await waitFor(async () => metricValue(await ingester.metrics(), 'dlq_consumer_lag', { topic: dlq }) === 0, {
    what: 'dlq_consumer_lag 0',
  });
});

describe('bad arguments: one line naming the problem, non-zero exit, nothing written', () => {
  test('send-test and purge-tests refuse --count 0, a missing or bad --tenant; a tenant without DLQ topic is exit 1', async () => {
    const tenant = uniqueTenant();
    const kafka = new Kafka({
      clientId: 'it-send-test',
      brokers: testServices().kafkaBrokers,
      logLevel: logLevel.NOTHING,
    });
    admin = kafka.admin();
    await admin.connect();
    await ensureTopics(admin, tenantTopicSpecs(tenant, { partitions: 1 }));
    made.push(tenant);

    const cases: [string[], number, RegExp][] = [
      [
        ['dlq', 'send-test', '--tenant', tenant, '--count', '0'],
        2,
        /--count = "0": must be a whole number from 1/,
      ],
      [
        ['dlq', 'send-test', '--tenant', tenant, '--count', 'many'],
        2,
        /--count = "many": must be a whole number/,
      ],
      [['dlq', 'send-test', '--count', '2'], 2, /required option '--tenant <tenant>' not specified/],
      [['dlq', 'send-test', '--tenant', 'Acme.Prod'], 2, /--tenant "Acme\.Prod" must match/],
      [['dlq', 'purge-tests'], 2, /required option '--tenant <tenant>' not specified/],
      [['dlq', 'purge-tests', '--tenant', '-x'], 2, /--tenant "-x" must match/],
    ];
    const missing = uniqueTenant();
    cases.push([
      ['dlq', 'send-test', '--tenant', missing],
      1,
      new RegExp(`topic ${topics.dlq(missing).replace(/\./g, '\\.')} does not exist`),
    ]);
    for (const [args, code, pattern] of cases) {
      const res = await cli(args);
      const lines = res.stderr.split('\n').filter((l) => l.trim() !== '');
      expect({ args, code: res.code, lines, stdout: res.stdout }).toEqual({
        args,
        code,
        lines: [expect.stringMatching(pattern)],
        stdout: '',
      });
      expect(lines[0]).toMatch(/^(poimen-relay|error): /);
    }
    expect((await watermarks(admin, topics.dlq(tenant))).get(0)!.high).toBe(0n);
    // send-test declares no topic for a tenant that has none (a mistyped tenant is an error, not a new topic).
    expect(await admin.listTopics()).not.toContain(topics.dlq(missing));
  });
});
