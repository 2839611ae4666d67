/**
 * Least-privilege Kafka ACLs: a broker running StandardAuthorizer with nothing allowed unless an ACL says so
 * (test/support/authKafka.ts), the relay authenticated by its client certificate (`User:CN=poimen-relay`) and
 * granted exactly the ingester's and worker's rows of docs/access.md ("The ACLs, role by role"), read from
 * the document.
 * The happy path still holds: a record starts its workflow, a malformed record and a refused dispatch are
 * dead-lettered (the worker's with the source record read back, not rebuilt), offsets and metrics are
 * read, and no Kafka call of either process is refused. A tenant with no ACLs is not seen at all. Each operator
 * command runs under a certificate of its own granted only that command's rows (test/support/operatorCli.ts), and
 * does its work (dry runs included) with no refusal.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Admin, Kafka, Producer } from 'kafkajs';
import { TENANT_PAUSES_TOPIC, encodeTenantPause, topics, workflowId } from '../src/contract';
import { watermarks } from '../src/kafka/readRange';
import { ensureTopics, tenantTopicSpecs } from '../src/kafka/topics';
import { TENANT_PAUSES_TOPIC_SPEC } from '../src/kafka/pauseTopic';
import { RunsApiDouble } from '../devstack/runsApiDouble';
import { type CertAuthKafka, certPrincipal, startCertAuthKafka } from './support/authKafka';
import { readTopicToEnd } from './support/dlqTopic';
import { aclEntries, documentedAcls } from './support/kafkaAcls';
import { uniqueName, uniqueTenant } from './support/names';
import { type OperatorRun, operatorFor, writeDeadLetter } from './support/operatorCli';
import { type RelayProcess, metricValue, relayEnv, startRelayProcess } from './support/relay';
import { closeTooling, connectTooling } from './support/kafkaTooling';
import { type Certs, generateCerts, tempDir } from './support/tlsServices';
import { waitFor } from './support/wait';

jest.setTimeout(300_000);

let dir: string;
let certs: Certs;
let kafka: CertAuthKafka;
let plain: Kafka;
let admin: Admin;
let producer: Producer;
let connection: Connection;
let client: Client;
const processes: RelayProcess[] = [];
let api: RunsApiDouble | undefined;

beforeAll(async () => {
  dir = tempDir('poimen-it-kafka-acls-');
  certs = generateCerts(path.join(dir, 'certs'));
  kafka = await startCertAuthKafka(path.join(dir, 'kafka'), certs, { acls: true });
  // PLAINTEXT is the super user: it makes the topics and grants the ACLs.
  ({ plain, admin, producer, connection, client } = await connectTooling(
    'it-kafka-acls',
    kafka.plainBrokers,
  ));
}, 300_000);

afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill()));
  await api?.close();
  await closeTooling({ producer, admin, connection });
  await kafka?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const OPERATOR_COMMANDS = [
  'topics apply',
  'topics list',
  'dlq send-test',
  'dlq list',
  'dlq summary',
  'dlq replay',
  'dlq redrive',
  'dlq discard',
  'dlq purge-tests',
  'tenant pause',
  'tenant resume',
  'tenant status',
];

function dispatch(key: string): string {
  return JSON.stringify({ workflow_ref: 'onboarding@v3', input: { n: 1 }, goal_id: null, dispatch_key: key });
}

test("the documented ingester and worker ACLs, and nothing more, carry a dispatch, its dead letters and the relay's metrics", async () => {
  const rows = documentedAcls().filter((r) => r.role === 'ingester' || r.role === 'worker');
  expect(new Set(rows.map((r) => r.role))).toEqual(new Set(['ingester', 'worker']));
  const tenant = uniqueTenant();
  const stranger = uniqueTenant();
  const groupId = uniqueName('it-acl-group');
  await ensureTopics(admin, [
    ...tenantTopicSpecs(tenant, { partitions: 1 }),
    ...tenantTopicSpecs(stranger, { partitions: 1 }),
  ]);
  await admin.createAcls({
    acl: aclEntries(rows, certPrincipal('poimen-relay'), { tenant, KAFKA_GROUP_ID: groupId }),
  });
  // A pause on the pause topic, so that the ingester follows it under its rows (the other tenant's: nothing held).
  await ensureTopics(admin, [TENANT_PAUSES_TOPIC_SPEC]);
  const pause = {
    tenant: stranger,
    paused: true,
    reason: 'acl test',
    at: new Date().toISOString(),
    by: null,
  };
  await producer.send({
    topic: TENANT_PAUSES_TOPIC,
    acks: -1,
    messages: [{ key: stranger, value: encodeTenantPause(pause) }],
  });

  api = await RunsApiDouble.start();
  api.scriptFor('refused-1', { kind: 'status', status: 422, body: '{"error":"unknown workflow_ref"}' });
  const env = relayEnv({
    // Both tenants match; only one is granted.
    tenantPattern: `^poimen\\.(${tenant}|${stranger})\\.dispatch$`,
    groupId,
    taskQueue: uniqueName('it-acl-tq'),
    runsApiUrl: api.url,
    extra: {
      KAFKA_BROKERS: kafka.secureBrokers,
      KAFKA_SSL_CA: certs.ca,
      KAFKA_SSL_CERT: certs.clientCert,
      KAFKA_SSL_KEY: certs.clientKey,
      // Refused calls of the metrics' refreshes are logged at debug: shown, so the check below sees them.
      LOG_LEVEL: 'debug',
      // The lag and DLQ backlog refreshes run within the test, not every 5 s / 30 s.
      POIMEN_LAG_REFRESH_MS: '500',
      POIMEN_DLQ_REFRESH_MS: '500',
    },
  });
  processes.push(await startRelayProcess('worker', env, `acl-${tenant}-worker`));
  const ingester = await startRelayProcess('ingest', env, `acl-${tenant}-ingest`);
  processes.push(ingester);

  await producer.send({
    topic: topics.dispatch(stranger),
    acks: -1,
    messages: [{ key: `${stranger}:hidden-1`, value: dispatch('hidden-1') }],
  });
  await producer.send({
    topic: topics.dispatch(tenant),
    acks: -1,
    messages: [
      { key: `${tenant}:ok-1`, value: dispatch('ok-1') },
      { key: `${tenant}:bad-1`, value: '{not json' },
      { key: `${tenant}:refused-1`, value: dispatch('refused-1') },
    ],
  });

  const handle = client.workflow.getHandle(workflowId(tenant, 'ok-1'));
  await waitFor(() => handle.describe().then(() => true), { what: 'the workflow of ok-1 to exist' });
  expect(await handle.result()).toEqual({ run_id: api.runs.get('ok-1'), admission: 'created' });

  const dlq = topics.dlq(tenant);
  await waitFor(async () => (await readTopicToEnd(plain, dlq)).length === 2, {
    timeoutMs: 120_000,
    what: 'both dead letters',
  });
  const letters = await readTopicToEnd(plain, dlq);
  expect(letters.map((r) => r?.type).sort()).toEqual(['dispatch_failure', 'malformed_dispatch']);
  // The worker read the refused dispatch's source record back (Read on the topic and its throwaway group).
  const failure = letters.find((r) => r?.type === 'dispatch_failure')!;
  expect(failure.error).not.toContain('payload rebuilt');

  await waitFor(
    async () =>
      (await admin.fetchOffsets({ groupId, topics: [topics.dispatch(tenant)] }))[0]?.partitions[0]?.offset ===
      '3',
    { what: 'all three offsets committed' },
  );
  // Lag and the DLQ backlog are read with the relay's own rights (group and replay-group Describe).
  await waitFor(
    async () => {
      const text = await ingester.metrics();
      return (
        metricValue(text, 'poimen_inbox_lag', { topic: topics.dispatch(tenant) }) === 0 &&
        metricValue(text, 'dlq_consumer_lag', { topic: dlq }) === 2 &&
        metricValue(text, 'poimen_tenant_paused', { tenant: stranger }) === 1
      );
    },
    { what: 'lag 0, a DLQ backlog of 2 and the pause read, in the metrics' },
  );

  // The tenant with no ACLs: invisible to the relay, its record untouched.
  const [hidden] = await admin.fetchOffsets({ groupId, topics: [topics.dispatch(stranger)] });
  expect(hidden?.partitions.map((p) => p.offset)).toEqual(['-1']);
  expect(api.requestsFor('hidden-1')).toHaveLength(0);
  // And no Kafka call of the relay was refused along the way.
  const logs = processes.map((p) => fs.readFileSync(p.logFile, 'utf8')).join('\n');
  expect(logs.match(/[A-Z_]*AUTHORIZATION_FAILED|not authorized/gi) ?? []).toEqual([]);
});

test('each operator command runs under its own documented rows alone', async () => {
  const rows = documentedAcls().filter((r) => r.role.startsWith('operator'));
  expect(new Set(rows.map((r) => r.role))).toEqual(
    new Set(OPERATOR_COMMANDS.map((c) => `operator: \`${c}\``)),
  );
  const tenant = uniqueTenant();
  const ctx = { admin, certs, brokers: kafka.secureBrokers, tenant };
  const as: Record<string, OperatorRun> = {};
  for (const command of OPERATOR_COMMANDS) as[command] = await operatorFor(command, rows, ctx);
  const json = async (command: string, args: string[]) =>
    JSON.parse(await as[command]!([...command.split(' '), ...args, '--json'])) as Record<string, unknown>;
  const [dispatchTopic, dlq] = [topics.dispatch(tenant), topics.dlq(tenant)];
  const published = async () => (await watermarks(admin, dispatchTopic)).get(0)?.high;

  await as['topics apply']!(['topics', 'apply', '--tenant', tenant, '--partitions', '1']);
  const declared = [dispatchTopic, dlq, `poimen.${tenant}.events`].sort();
  expect((await admin.listTopics()).filter((t) => t.startsWith(`poimen.${tenant}.`)).sort()).toEqual(
    declared,
  );
  // Only the topics the principal may Describe are listed (the first test's tenants exist too).
  const listed = (await json('topics list', [])) as unknown as { topic: string }[];
  expect(listed.map((t) => t.topic).sort()).toEqual(declared);

  const sent = await json('dlq send-test', ['--tenant', tenant, '--count', '2']);
  expect(sent.published).toBe(2);
  const failed = await writeDeadLetter(producer, tenant, {
    type: 'dispatch_failure',
    dispatchKey: 'replay-1',
    error: 'runs API answered 422',
    httpStatus: 422,
    value: dispatch('replay-1'),
  });
  // Read back by the super user first; on a fresh broker this also waits out the group coordinator's first
  // load, which a one-shot command does not retry (not what this test is about).
  expect((await readTopicToEnd(plain, dlq)).map((r) => r?.id)).toEqual([...(sent.ids as string[]), failed]);
  expect(await as['dlq list']!(['dlq', 'list', '--tenant', tenant, '--json'])).toContain(failed);
  expect(await json('dlq summary', ['--tenant', tenant])).toMatchObject({ tenants: [tenant] });
  // Without --tenant: only the DLQ topics the principal may Describe.
  expect(await json('dlq summary', [])).toMatchObject({ tenants: [tenant] });

  expect(await json('dlq replay', ['--tenant', tenant, '--dry-run'])).toMatchObject({
    wouldReplay: 1,
    tests: 2,
  });
  expect(await as['dlq replay']!(['dlq', 'replay', '--tenant', tenant])).toMatch(/replayed 1,/);
  expect(await published()).toBe(1n);

  // A failure that ran out of retries (redrivable) and a malformed record (only to discard).
  await writeDeadLetter(producer, tenant, {
    type: 'dispatch_failure',
    dispatchKey: 'redrive-1',
    error: 'runs API timed out',
    httpStatus: null,
    value: dispatch('redrive-1'),
  });
  const malformed = await writeDeadLetter(producer, tenant, {
    type: 'malformed_dispatch',
    dispatchKey: null,
    error: 'not JSON',
    value: '{not json',
  });
  const redrive = ['--tenant', tenant, '--after', '0s', '--max', '1'];
  expect(await json('dlq redrive', [...redrive, '--dry-run'])).toMatchObject({ wouldReplay: 1 });
  expect(await json('dlq redrive', redrive)).toMatchObject({ replayed: 1 });
  expect(await published()).toBe(2n);
  // By id: the test dead letters are malformed_dispatch too, and purge-tests takes those.
  const discard = ['--tenant', tenant, '--id', malformed];
  expect(await json('dlq discard', [...discard, '--dry-run'])).toMatchObject({ discarded: 1 });
  expect(await json('dlq discard', discard)).toMatchObject({ discarded: 1 });
  expect(await json('dlq purge-tests', ['--tenant', tenant, '--dry-run'])).toMatchObject({ discarded: 2 });
  expect(await json('dlq purge-tests', ['--tenant', tenant])).toMatchObject({ discarded: 2 });

  // A tenant paused and resumed, each command under its own rows (the pause topic exists from the first test).
  expect(await json('tenant pause', [tenant, '--reason', 'acl test'])).toMatchObject({
    after: { paused: true },
  });
  expect(await as['tenant status']!(['tenant', 'status', tenant])).toMatch(/paused since .*: acl test/);
  expect(await json('tenant resume', [tenant])).toMatchObject({
    before: { paused: true },
    after: { paused: false },
  });

  // Every dead letter handled, and every throwaway group deleted after its read.
  const [progress] = await admin.fetchOffsets({ groupId: `poimen-relay-dlq.${tenant}`, topics: [dlq] });
  expect(progress?.partitions.map((p) => p.offset)).toEqual(['5']);
  const { groups } = await admin.listGroups();
  expect(
    groups
      .map((g) => g.groupId)
      .filter((g) => /^poimen-relay-(dlq-(list|summary|dry-run)|pauses-read)-/.test(g)),
  ).toEqual([]);
});
