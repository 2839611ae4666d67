/**
 * `dlq summary` on the real stack: real dead letters of two tenants (refused by the runs API, malformed at
 * ingest) grouped by type, error class, HTTP status and workflow_ref, without payloads, and read without
 * consuming: the replay group's progress, the backlog and a replay running meanwhile are left as they were.
 */
import type { Admin } from 'kafkajs';
import { dlqReplayGroup, topics } from '../src/contract';
import { EXIT } from '../src/errors';
import { watermarks } from '../src/kafka/readRange';
import { dlqBacklog } from '../src/ops/dlq';
import { type DlqSummary, summarizeDlq } from '../src/ops/dlqSummary';
import { type CliResult, cliEnv, runCli, startCli } from './support/cli';
import { readDeadLetterStore } from './support/dlqScenario';
import { type RelayProcess, metricSum } from './support/relay';
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

function json<T>(res: CliResult): T {
  if (res.code !== 0) throw new Error(`exit ${res.code}: ${res.stderr}`);
  return JSON.parse(res.stdout) as T;
}

const summary = async (...args: string[]) =>
  json<DlqSummary>(await runCli(['dlq', 'summary', '--json', ...args], cliEnv(), 120_000));

async function dlqEnd(a: Admin, tenant: string): Promise<number> {
  return Number((await watermarks(a, topics.dlq(tenant))).get(0)!.high);
}

test('groups every tenant’s dead letters; reads without consuming, beside a running replay', async () => {
  h = await createHarness({ tenants: 2 });
  const worker = await h.startWorker();
  const ingester = await h.startIngester();
  admin = h.kafka.admin();
  await admin.connect();
  const [t1, t2] = h.tenants as [string, string];
  const a = admin;

  // t1: three 422s and one 400 for onboarding@v3, one 422 for report@v1, one malformed record; t2: two malformed.
  for (const [k, status] of [
    ['a', 422],
    ['b', 422],
    ['c', 422],
    ['x', 400],
    ['r', 422],
  ] as const) {
    h.api.scriptFor(k, { kind: 'status', status });
    await h.publish(h.dispatchValue(k, k === 'r' ? { workflow_ref: 'report@v1' } : {}));
  }
  await h.publish('{"broken": ');
  await h.publish('{"broken": ', { topic: topics.dispatch(t2) });
  await h.publish('   ', { topic: topics.dispatch(t2) });
  await waitFor(async () => (await dlqEnd(a, t1)) === 6 && (await dlqEnd(a, t2)) === 2, {
    what: 'six dead letters of t1 and two of t2',
  });
  const stored = (await readDeadLetterStore(h, topics.dlq(t1))).map((s) => s.record!);
  const byKey = (k: string) => stored.find((r) => r.dispatch_key === k)!;

  // Progress recorded by an operator before: a's dead letter discarded (the group commits past it).
  json(await runCli(['dlq', 'discard', '--tenant', t1, '--id', byKey('a').id, '--json'], cliEnv()));
  const progress = async () =>
    JSON.stringify(await a.fetchOffsets({ groupId: dlqReplayGroup(t1), topics: [topics.dlq(t1)] }));
  const progressBefore = await progress();
  const backlogBefore = await dlqBacklog(a, topics.dlq(t1), Date.now());
  expect(backlogBefore.lag).toBe(5);

  const all = await summary();
  expect(all.tenants).toEqual(expect.arrayContaining([t1, t2]));
  const mine = all.groups.filter((g) => g.tenant === t1 || g.tenant === t2);
  const ids = (...keys: string[]) => keys.map((k) => byKey(k).id);
  const timesOf = (...keys: string[]) => keys.map((k) => byKey(k).timestamp).sort();
  const group = (keys: string[], fields: object) => ({
    ...fields,
    count: keys.length,
    first: new Date(timesOf(...keys)[0]!).toISOString(),
    last: new Date(timesOf(...keys).at(-1)!).toISOString(),
    example_id: expect.stringMatching(new RegExp(`^(${ids(...keys).join('|')})$`)),
  });
  const failure = { tenant: t1, type: 'dispatch_failure', workflow_ref: 'onboarding@v3' };
  expect(mine.filter((g) => g.tenant === t1 && g.type === 'dispatch_failure')).toEqual([
    group(['a', 'b', 'c'], { ...failure, error_class: 'runs API answered 422', http_status: 422 }),
    group(['x'], { ...failure, error_class: 'runs API answered 400', http_status: 400 }),
    group(['r'], {
      ...failure,
      workflow_ref: 'report@v1',
      error_class: 'runs API answered 422',
      http_status: 422,
    }),
  ]);
  const malformed = (tenant: string, error_class: string) =>
    expect.objectContaining({
      tenant,
      type: 'malformed_dispatch',
      error_class,
      http_status: null,
      workflow_ref: null,
      count: 1,
    });
  expect(mine.filter((g) => g.type === 'malformed_dispatch')).toEqual(
    expect.arrayContaining([
      malformed(t1, 'value is not valid JSON'),
      malformed(t2, 'value is not valid JSON'),
      malformed(t2, 'value is only whitespace (N bytes)'),
    ]),
  );
  expect(mine.reduce((n, g) => n + g.count, 0)).toBe(8);

  // The same grouping over time, from the metrics (the dashboard's panel), less workflow_ref (not a label).
  const sent = async (p: RelayProcess, labels: Record<string, string>) =>
    metricSum(await p.metrics(), 'dlq_messages_sent_total', labels);
  const refused = { topic: topics.dlq(t1), type: 'dispatch_failure' };
  expect(await sent(worker, { ...refused, error_class: 'runs API answered 422', http_status: '422' })).toBe(
    4,
  );
  expect(await sent(worker, { ...refused, error_class: 'runs API answered 400', http_status: '400' })).toBe(
    1,
  );
  const bad = { type: 'malformed_dispatch', http_status: 'none' };
  expect(
    await sent(ingester, { ...bad, topic: topics.dlq(t1), error_class: 'value is not valid JSON' }),
  ).toBe(1);
  expect(
    await sent(ingester, {
      ...bad,
      topic: topics.dlq(t2),
      error_class: 'value is only whitespace (N bytes)',
    }),
  ).toBe(1);

  // One tenant, as a table; no payload is printed (the dispatches' input and goal id are in every payload).
  const table = await runCli(['dlq', 'summary', '--tenant', t1], cliEnv(), 120_000);
  expect(table.code).toBe(0);
  const lines = table.stdout.trimEnd().split('\n');
  expect(lines[0]).toMatch(
    /^COUNT +TENANT +TYPE +STATUS +WORKFLOW_REF +FIRST +LAST +EXAMPLE_ID +ERROR_CLASS$/,
  );
  expect(lines).toHaveLength(5);
  expect(lines[1]).toMatch(
    new RegExp(`^ *3 +${t1} +dispatch_failure +422 +onboarding@v3 .* runs API answered 422$`),
  );
  expect(table.stdout).not.toMatch(/"user"|g-17|broken/);
  expect(table.stderr).toContain('6 dead letter(s) in 4 group(s), 1 tenant(s)');
  expect((await summary('--tenant', t2, '--since', new Date(Date.now() + 60_000).toISOString())).total).toBe(
    0,
  );

  // Nothing consumed: the replay group's progress and the backlog are as they were, no reader group is left.
  expect(await progress()).toBe(progressBefore);
  expect(await dlqBacklog(a, topics.dlq(t1), Date.now())).toMatchObject({ lag: backlogBefore.lag });
  const { groups } = await a.listGroups();
  expect(groups.filter((g) => g.groupId.startsWith('poimen-relay-dlq-summary'))).toEqual([]);

  // A replay running meanwhile is not disturbed: it replays everything replayable, one record a second.
  const replay = startCli(['dlq', 'replay', '--tenant', t1, '--rate', '1', '--json'], cliEnv(), 120_000);
  await waitFor(async () => (await progress()) !== progressBefore, { what: 'the replay to record a record' });
  for (let i = 0; i < 2; i++) expect((await summary('--tenant', t1)).total).toBeGreaterThanOrEqual(6);
  expect(json(await replay.result)).toMatchObject({ replayed: 4, notReplayable: 1 });
});

test('bad flags: one line, exit 2; a tenant without a DLQ topic: exit 1', async () => {
  for (const args of [
    ['--since', 'yesterday'],
    ['--tenant', 'Not A Tenant'],
    ['--limit', '3'],
  ]) {
    const res = await runCli(['dlq', 'summary', ...args], cliEnv(), 60_000);
    expect({ args, code: res.code, lines: res.stderr.trimEnd().split('\n').length }).toEqual({
      args,
      code: EXIT.usage,
      lines: 1,
    });
    // An unknown option is commander's own line; a bad value names the flag.
    expect(res.stderr).toMatch(args[0] === '--limit' ? /unknown option '--limit'/ : /^poimen-relay: .*--/);
    expect(res.stdout).toBe('');
  }
  const missing = await runCli(['dlq', 'summary', '--tenant', 'no-such-tenant-dlq'], cliEnv(), 60_000);
  expect(missing.code).toBe(EXIT.notFound);
  expect(missing.stderr).toMatch(
    /^poimen-relay: topic poimen\.no-such-tenant-dlq\.dispatch\.dlq does not exist/,
  );
});

test('a DLQ topic deleted between listing and reading: the others are summarised, the vanished one named', async () => {
  h = await createHarness({ tenants: 2 });
  admin = h.kafka.admin();
  await admin.connect();
  const a = admin;
  const [gone, kept] = h.tenants as [string, string];
  for (const t of [gone, kept])
    await h.producer.send({ topic: topics.dlq(t), acks: -1, messages: [{ value: 'not a dead letter' }] });
  // The seam: the summary lists the topics through this admin; right after that listing, before anything is read,
  // the first tenant's DLQ topic is deleted (and gone from the cluster's metadata).
  let listed = false;
  const deletingAfterListing = new Proxy(a, {
    get(target, prop) {
      if (prop === 'listTopics' && !listed)
        return async () => {
          listed = true;
          const names = await target.listTopics();
          await target.deleteTopics({ topics: [topics.dlq(gone)] });
          await waitFor(async () => !(await target.listTopics()).includes(topics.dlq(gone)), {
            what: `${topics.dlq(gone)} deleted`,
          });
          return names;
        };
      const v: unknown = Reflect.get(target, prop);
      return typeof v === 'function' ? (v as (...args: unknown[]) => unknown).bind(target) : v;
    },
  });
  const result = await summarizeDlq(h.kafka, deletingAfterListing, {});
  expect(listed).toBe(true);
  expect(result.vanished).toEqual([gone]);
  expect(result.tenants).toContain(kept);
  expect(result.tenants).not.toContain(gone);
  expect(result.groups.filter((g) => g.tenant === gone || g.tenant === kept)).toEqual([
    expect.objectContaining({ tenant: kept, type: 'unreadable', count: 1 }),
  ]);
});
