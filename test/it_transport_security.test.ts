/**
 * Transport security with real services and the relay's real processes: Kafka over SASL/SCRAM + TLS
 * (a dedicated broker with a SASL_SSL listener), Temporal over mTLS with an API key (HAProxy terminating TLS in
 * front of the dev server, client certificate required), the runs API over HTTPS with a custom CA. All of it is
 * configured through the environment only (contract §8 plus KAFKA_SSL_CA and RUNS_API_CA, docs/configuration.md).
 *
 * The dev server does not check API keys; what this suite can honestly show for TEMPORAL_API_KEY is that the
 * relay works with one set and never prints it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import type { Admin, Kafka, Producer } from 'kafkajs';
import { topics, workflowId } from '../src/contract';
import { ensureTopics, tenantTopicSpecs } from '../src/kafka/topics';
import { tlsRefusal } from '../src/tlsErrors';
import { type CliResult, REPO_ROOT, runCli } from './support/cli';
import { readTopicToEnd } from './support/dlqTopic';
import { uniqueName, uniqueTenant } from './support/names';
import { type RelayProcess, relayEnv, startRelayProcess } from './support/relay';
import { RunsApiDouble } from '../devstack/runsApiDouble';
import { closeTooling, connectTooling } from './support/kafkaTooling';
import { testServices } from './support/testEnv';
import {
  type Certs,
  type SecureKafka,
  type TlsProxy,
  generateCerts,
  startSecureKafka,
  startTlsProxy,
  tempDir,
} from './support/tlsServices';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

const API_KEY = `it-api-key-${uniqueName('k')}`;

let dir: string;
let certs: Certs;
let kafka: SecureKafka;
let proxy: TlsProxy;
let plain: Kafka;
let admin: Admin;
let producer: Producer;
let connection: Connection;
let client: Client;

beforeAll(async () => {
  dir = tempDir('poimen-it-tls-');
  certs = generateCerts(path.join(dir, 'certs'));
  kafka = await startSecureKafka(path.join(dir, 'kafka'), certs);
  proxy = await startTlsProxy(dir, certs, testServices().temporalAddress);
  ({ plain, admin, producer, connection, client } = await connectTooling('it-tls', kafka.plainBrokers));
}, 300_000);

afterAll(async () => {
  await closeTooling({ producer, admin, connection });
  await proxy?.stop();
  await kafka?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** One test's world: tenant topics on the TLS broker, a group, a task queue, an HTTPS runs API double. */
interface World {
  tenant: string;
  groupId: string;
  api: RunsApiDouble;
  /** The relay's environment with every transport secured and the right credentials. */
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

async function createWorld(
  apiCert: { cert: string; key: string } = { cert: certs.serverCert, key: certs.serverKey },
): Promise<World> {
  const tenant = uniqueTenant();
  await ensureTopics(admin, tenantTopicSpecs(tenant, { partitions: 1 }));
  const api = await RunsApiDouble.start({
    tls: { cert: fs.readFileSync(apiCert.cert), key: fs.readFileSync(apiCert.key) },
  });
  const groupId = uniqueName('it-tls-group');
  const env = relayEnv({
    tenantPattern: `^poimen\\.${tenant}\\.dispatch$`,
    groupId,
    taskQueue: uniqueName('it-tls-tq'),
    runsApiUrl: api.url,
    extra: {
      KAFKA_BROKERS: kafka.secureBrokers,
      KAFKA_SSL: 'true',
      KAFKA_SSL_CA: certs.ca,
      KAFKA_SASL_MECHANISM: 'scram-sha-256',
      KAFKA_SASL_USERNAME: kafka.username,
      KAFKA_SASL_PASSWORD: kafka.password,
      TEMPORAL_ADDRESS: proxy.address,
      TEMPORAL_TLS_CA: certs.ca,
      TEMPORAL_TLS_CERT: certs.clientCert,
      TEMPORAL_TLS_KEY: certs.clientKey,
      TEMPORAL_API_KEY: API_KEY,
      RUNS_API_CA: certs.ca,
    },
  });
  world = { tenant, groupId, api, env, processes: [] };
  return world;
}

async function start(w: World, role: 'ingest' | 'worker', env: NodeJS.ProcessEnv = w.env) {
  const p = await startRelayProcess(role, env, `tls-${w.tenant}-${role}`);
  w.processes.push(p);
  return p;
}

function dispatch(key: string): string {
  return JSON.stringify({
    workflow_ref: 'onboarding@v3',
    input: { user: 42 },
    goal_id: null,
    dispatch_key: key,
  });
}

async function publish(w: World, ...keys: string[]): Promise<void> {
  await producer.send({
    topic: topics.dispatch(w.tenant),
    acks: -1,
    messages: keys.map((k) => ({ key: `${w.tenant}:${k}`, value: dispatch(k) })),
  });
}

async function result(w: World, key: string): Promise<unknown> {
  const handle = client.workflow.getHandle(workflowId(w.tenant, key));
  await waitFor(() => handle.describe().then(() => true), { what: `workflow of ${key} to exist` });
  return handle.result();
}

/** Committed offsets of the group on the dispatch topic ('-1' = nothing committed). */
async function committed(w: World): Promise<string[]> {
  const [t] = await admin.fetchOffsets({ groupId: w.groupId, topics: [topics.dispatch(w.tenant)] });
  return (t?.partitions ?? []).map((p) => p.offset);
}

/** A process that must refuse to start: exit 2 and exactly one `poimen-relay:` line, naming the problem. */
function expectOneClearLine(res: CliResult, pattern: RegExp): string {
  // Kept beside the relay logs, so a failure can be read afterwards.
  const logs = path.join(REPO_ROOT, 'test-artifacts', 'logs');
  fs.mkdirSync(logs, { recursive: true });
  fs.writeFileSync(
    path.join(logs, `tls-cli-${Date.now()}.log`),
    `exit ${res.code}\n${res.stderr}${res.stdout}`,
  );
  const lines = res.stderr.split('\n').filter((l) => l.startsWith('poimen-relay:'));
  expect({ code: res.code, lines }).toEqual({ code: 2, lines: [expect.stringMatching(pattern)] });
  for (const secret of [kafka.password, API_KEY]) {
    expect(res.stdout + res.stderr).not.toContain(secret);
  }
  return lines[0]!;
}

function logsOf(w: World): string {
  return w.processes.map((p) => fs.readFileSync(p.logFile, 'utf8')).join('\n');
}

describe('transport security: SASL_SSL Kafka, mTLS Temporal, an HTTPS runs API', () => {
  test('a dispatch crosses SASL_SSL Kafka, mTLS Temporal with an API key and an HTTPS runs API: exactly one run', async () => {
    const w = await createWorld();
    await start(w, 'worker');
    await start(w, 'ingest');
    await publish(w, 'secure-1');

    expect(await result(w, 'secure-1')).toEqual({ run_id: w.api.runs.get('secure-1'), admission: 'created' });
    expect(w.api.requestsFor('secure-1')).toHaveLength(1);
    expect(w.api.url).toMatch(/^https:/);
    const desc = await client.workflow.getHandle(workflowId(w.tenant, 'secure-1')).describe();
    expect(desc.status.name).toBe('COMPLETED');
    await waitFor(async () => (await committed(w)).join() === '1', { what: 'the offset to be committed' });
    const logs = logsOf(w);
    expect(logs).not.toContain(kafka.password);
    expect(logs).not.toContain(API_KEY);
  });

  test('wrong Kafka password: the ingester stops with one line naming the credentials, commits nothing; the right one relays the records', async () => {
    const w = await createWorld();
    await start(w, 'worker');
    await publish(w, 'pw-1', 'pw-2');

    const wrong = 'not-the-password';
    const res = await runCli(
      ['ingest'],
      { ...w.env, KAFKA_SASL_PASSWORD: wrong, METRICS_PORT: '0' },
      120_000,
    );
    const line = expectOneClearLine(res, /KAFKA_SASL_USERNAME\/KAFKA_SASL_PASSWORD were rejected by Kafka/);
    expect(line).toContain('scram-sha-256 user "relay"');
    expect(res.stderr).not.toContain(wrong);
    expect(await committed(w)).toEqual(['-1']);

    await start(w, 'ingest');
    expect(await result(w, 'pw-1')).toMatchObject({ admission: 'created' });
    expect(await result(w, 'pw-2')).toMatchObject({ admission: 'created' });
    expect(w.api.runs.size).toBe(2);
  });

  test('Temporal without a client certificate, or with one of another CA: one clear line, nothing committed', async () => {
    const w = await createWorld();
    await publish(w, 'mtls-1');
    const noCert: NodeJS.ProcessEnv = { ...w.env, METRICS_PORT: '0' };
    delete noCert.TEMPORAL_TLS_CERT;
    delete noCert.TEMPORAL_TLS_KEY;

    const worker = await runCli(['worker'], noCert, 120_000);
    expectOneClearLine(
      worker,
      /TEMPORAL_TLS_CERT\/TEMPORAL_TLS_KEY are unset but Temporal at .* requires a client certificate/,
    );

    const ingester = await runCli(
      ['ingest'],
      {
        ...w.env,
        METRICS_PORT: '0',
        TEMPORAL_TLS_CERT: certs.otherClientCert,
        TEMPORAL_TLS_KEY: certs.otherClientKey,
      },
      120_000,
    );
    expectOneClearLine(
      ingester,
      /TEMPORAL_TLS_CERT\/TEMPORAL_TLS_KEY were refused by Temporal at .*\(ERR_SSL_\w+\)/,
    );

    // And the other direction: a CA that does not sign the proxy's certificate.
    const wrongCa = await runCli(
      ['ingest'],
      { ...w.env, METRICS_PORT: '0', TEMPORAL_TLS_CA: certs.otherCa },
      120_000,
    );
    expectOneClearLine(wrongCa, /TEMPORAL_TLS_CA does not verify the certificate of Temporal at /);

    expect(await committed(w)).toEqual(['-1']);
    expect(w.api.requests).toHaveLength(0);
  });

  test('a runs API certificate the worker does not trust: attempts fail by TLS error code, retry, and end in the DLQ; no run is made', async () => {
    const w = await createWorld({ cert: certs.otherServerCert, key: certs.otherServerKey });
    // This test waits for the dispatch's dead letter: a cap of 4 quick attempts, where the default budget is 24 h.
    // The retry policy travels in the workflow's input, so it is the ingester's to read.
    const capped = {
      ...w.env,
      RETRY_MAX_ATTEMPTS: '4',
      RETRY_INITIAL_INTERVAL_MS: '200',
      RETRY_MAX_INTERVAL_MS: '1000',
    };
    await start(w, 'worker');
    await start(w, 'ingest', capped);
    await publish(w, 'untrusted-1');

    const failure = await result(w, 'untrusted-1').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect(w.api.requests).toHaveLength(0);
    expect(w.api.runs.size).toBe(0);

    // The workflow fails only after its dead letter is published: it is in the topic now.
    const records = (await readTopicToEnd(plain, topics.dlq(w.tenant))).filter(
      (r) => r?.dispatch_key === 'untrusted-1',
    );
    expect(records).toHaveLength(1);
    const rec = records[0]!;
    expect(rec).toMatchObject({ type: 'dispatch_failure', dispatch_key: 'untrusted-1', http_status: null });
    // Every attempt was made (the TLS failure is retryable), classified by its code.
    expect(rec.retry_count).toBe(rec.max_retries);
    const code = /runs API request failed: ([A-Z_]+)/.exec(rec.error)?.[1];
    expect(tlsRefusal(code)).toBe('untrusted-server');
  });
});
