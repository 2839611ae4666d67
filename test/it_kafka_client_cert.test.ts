/**
 * Kafka client certificates (mTLS), with the relay's real processes and a real broker whose listener requires
 * one (`ssl.client.auth=required`, test/support/authKafka.ts): with KAFKA_SSL_CERT/KAFKA_SSL_KEY the ingester
 * consumes and dead-letters and the worker dead-letters over it; without a certificate, with one the brokers do
 * not trust, or with an unreadable file, the ingester stops with one line naming the variables, nothing
 * committed. Certificates are made with `openssl` at test time.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Admin, Kafka, Producer } from 'kafkajs';
import { topics, workflowId } from '../src/contract';
import { ensureTopics, tenantTopicSpecs } from '../src/kafka/topics';
import { RunsApiDouble } from '../devstack/runsApiDouble';
import { type CertAuthKafka, startCertAuthKafka } from './support/authKafka';
import { type CliResult, REPO_ROOT, runCli } from './support/cli';
import { readTopicToEnd } from './support/dlqTopic';
import { uniqueName, uniqueTenant } from './support/names';
import { type RelayProcess, relayEnv, startRelayProcess } from './support/relay';
import { closeTooling, connectTooling } from './support/kafkaTooling';
import { type Certs, generateCerts, tempDir } from './support/tlsServices';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

let dir: string;
let certs: Certs;
let kafka: CertAuthKafka;
let plain: Kafka;
let admin: Admin;
let producer: Producer;
let connection: Connection;
let client: Client;

beforeAll(async () => {
  dir = tempDir('poimen-it-kafka-mtls-');
  certs = generateCerts(path.join(dir, 'certs'));
  kafka = await startCertAuthKafka(path.join(dir, 'kafka'), certs);
  ({ plain, admin, producer, connection, client } = await connectTooling(
    'it-kafka-mtls',
    kafka.plainBrokers,
  ));
}, 300_000);

afterAll(async () => {
  await closeTooling({ producer, admin, connection });
  await kafka?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

interface World {
  tenant: string;
  groupId: string;
  api: RunsApiDouble;
  env: NodeJS.ProcessEnv;
  processes: RelayProcess[];
}

let world: World | undefined;
afterEach(async () => {
  if (!world) return;
  await Promise.all(world.processes.map((p) => p.kill()));
  await world.api.close();
  world = undefined;
});

async function createWorld(): Promise<World> {
  const tenant = uniqueTenant();
  await ensureTopics(admin, tenantTopicSpecs(tenant, { partitions: 1 }));
  const api = await RunsApiDouble.start();
  const groupId = uniqueName('it-mtls-group');
  const env = relayEnv({
    tenantPattern: `^poimen\\.${tenant}\\.dispatch$`,
    groupId,
    taskQueue: uniqueName('it-mtls-tq'),
    runsApiUrl: api.url,
    extra: {
      KAFKA_BROKERS: kafka.secureBrokers,
      KAFKA_SSL_CA: certs.ca,
      KAFKA_SSL_CERT: certs.clientCert,
      KAFKA_SSL_KEY: certs.clientKey,
    },
  });
  world = { tenant, groupId, api, env, processes: [] };
  return world;
}

async function start(w: World, role: 'ingest' | 'worker') {
  const p = await startRelayProcess(role, w.env, `mtls-${w.tenant}-${role}`);
  w.processes.push(p);
  return p;
}

function dispatch(key: string): string {
  return JSON.stringify({ workflow_ref: 'onboarding@v3', input: { n: 1 }, goal_id: null, dispatch_key: key });
}

async function committed(w: World): Promise<string[]> {
  const [t] = await admin.fetchOffsets({ groupId: w.groupId, topics: [topics.dispatch(w.tenant)] });
  return (t?.partitions ?? []).map((p) => p.offset);
}

/** A process that must refuse to start: exit 2 and exactly one `poimen-relay:` line, naming the problem. */
function expectOneClearLine(res: CliResult, pattern: RegExp): void {
  const logs = path.join(REPO_ROOT, 'test-artifacts', 'logs');
  fs.mkdirSync(logs, { recursive: true });
  fs.writeFileSync(
    path.join(logs, `mtls-cli-${Date.now()}.log`),
    `exit ${res.code}\n${res.stderr}${res.stdout}`,
  );
  const lines = res.stderr.split('\n').filter((l) => l.startsWith('poimen-relay:'));
  expect({ code: res.code, lines }).toEqual({ code: 2, lines: [expect.stringMatching(pattern)] });
}

describe('Kafka client certificates (mTLS)', () => {
  test('with KAFKA_SSL_CERT/KAFKA_SSL_KEY a dispatch is started, and the ingester and the worker dead-letter over mTLS', async () => {
    const w = await createWorld();
    w.api.scriptFor('refused-1', { kind: 'status', status: 422, body: '{"error":"unknown workflow_ref"}' });
    await start(w, 'worker');
    await start(w, 'ingest');
    await producer.send({
      topic: topics.dispatch(w.tenant),
      acks: -1,
      messages: [
        { key: `${w.tenant}:ok-1`, value: dispatch('ok-1') },
        { key: `${w.tenant}:bad-1`, value: '{not json' },
        { key: `${w.tenant}:refused-1`, value: dispatch('refused-1') },
      ],
    });

    const handle = client.workflow.getHandle(workflowId(w.tenant, 'ok-1'));
    await waitFor(() => handle.describe().then(() => true), { what: 'the workflow of ok-1 to exist' });
    expect(await handle.result()).toEqual({ run_id: w.api.runs.get('ok-1'), admission: 'created' });

    // The malformed record is the ingester's dead letter; the refused dispatch the worker's.
    const dlq = topics.dlq(w.tenant);
    await waitFor(async () => (await readTopicToEnd(plain, dlq)).length === 2, {
      timeoutMs: 120_000,
      what: 'both dead letters',
    });
    const types = (await readTopicToEnd(plain, dlq)).map((r) => r?.type).sort();
    expect(types).toEqual(['dispatch_failure', 'malformed_dispatch']);
    await waitFor(async () => (await committed(w)).join() === '3', { what: 'all three offsets committed' });
  });

  test('no client certificate, one of another CA, or an unreadable file: the ingester stops with one line naming the variables', async () => {
    const w = await createWorld();
    await producer.send({
      topic: topics.dispatch(w.tenant),
      acks: -1,
      messages: [{ key: `${w.tenant}:never-1`, value: dispatch('never-1') }],
    });
    const noCert: NodeJS.ProcessEnv = { ...w.env, METRICS_PORT: '0' };
    delete noCert.KAFKA_SSL_CERT;
    delete noCert.KAFKA_SSL_KEY;
    expectOneClearLine(
      await runCli(['ingest'], noCert, 120_000),
      /KAFKA_SSL_CERT\/KAFKA_SSL_KEY are unset but Kafka at 127\.0\.0\.1:\d+ requires a client certificate \(ERR_SSL_[\w/]+\)$/,
    );

    const otherCa = {
      ...w.env,
      METRICS_PORT: '0',
      KAFKA_SSL_CERT: certs.otherClientCert,
      KAFKA_SSL_KEY: certs.otherClientKey,
    };
    expectOneClearLine(
      await runCli(['ingest'], otherCa, 120_000),
      /KAFKA_SSL_CERT\/KAFKA_SSL_KEY were refused by Kafka at 127\.0\.0\.1:\d+ \(ERR_SSL_[\w/]+\)$/,
    );

    const missing = path.join(dir, 'no-such-client.pem');
    expectOneClearLine(
      await runCli(['ingest'], { ...w.env, METRICS_PORT: '0', KAFKA_SSL_CERT: missing }, 120_000),
      new RegExp(`KAFKA_SSL_CERT = ${JSON.stringify(missing)}: is not a readable file$`),
    );

    expect(await committed(w)).toEqual(['-1']);
    expect(w.api.requests).toHaveLength(0);
  });
});
