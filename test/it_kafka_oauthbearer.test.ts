/**
 * Kafka SASL/OAUTHBEARER as managed Kafka services use it, with the relay's real processes configured only by
 * environment variables: the relay gets its token from a test OAuth server by the client credentials grant
 * (test/support/oauthServer.ts, RS256 JWTs) and a real broker checks it against the server's JWKS
 * (test/support/oauthKafka.ts). Tokens live 30 s and the broker asks for re-authentication every 20 s, so a
 * dispatch sent after the first token expired proves the relay fetched and presented a fresh one. A wrong client
 * secret, a missing endpoint, an unreachable endpoint and a token signed by a key the broker does not trust each
 * stop a process or command with one line.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Admin, Kafka, Producer } from 'kafkajs';
import { topics, workflowId } from '../src/contract';
import { ensureTopics, tenantTopicSpecs } from '../src/kafka/topics';
import { RunsApiDouble } from '../devstack/runsApiDouble';
import { type CliResult, REPO_ROOT, runCli } from './support/cli';
import { readTopicToEnd } from './support/dlqTopic';
import { closeTooling, connectTooling } from './support/kafkaTooling';
import { uniqueName, uniqueTenant } from './support/names';
import { type OAuthKafka, startOAuthKafka } from './support/oauthKafka';
import { OAuthServer } from './support/oauthServer';
import { type RelayProcess, relayEnv, startRelayProcess } from './support/relay';
import { tempDir } from './support/tlsServices';
import { waitFor } from './support/wait';

jest.setTimeout(300_000);

const CLIENT_ID = 'poimen-relay';
const CLIENT_SECRET = 'relay-client-secret-9f2c';
const ISSUER = 'http://poimen-test-issuer';
const AUDIENCE = 'kafka-test-cluster';
const TOKEN_LIFETIME_S = 30;

let dir: string;
let tokens: OAuthServer;
let kafka: OAuthKafka;
let plain: Kafka;
let admin: Admin;
let producer: Producer;
let connection: Connection;
let client: Client;

beforeAll(async () => {
  dir = tempDir('poimen-it-kafka-oauth-');
  tokens = await OAuthServer.start({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    lifetimeS: TOKEN_LIFETIME_S,
    issuer: ISSUER,
    audience: AUDIENCE,
  });
  kafka = await startOAuthKafka(path.join(dir, 'kafka'), tokens, {
    issuer: ISSUER,
    audience: AUDIENCE,
    reauthMs: 20_000,
  });
  ({ plain, admin, producer, connection, client } = await connectTooling(
    'it-kafka-oauth',
    kafka.plainBrokers,
  ));
}, 300_000);

afterAll(async () => {
  await closeTooling({ producer, admin, connection });
  await kafka?.stop();
  await tokens?.close();
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
  const groupId = uniqueName('it-oauth-group');
  const env = relayEnv({
    tenantPattern: `^poimen\\.${tenant}\\.dispatch$`,
    groupId,
    taskQueue: uniqueName('it-oauth-tq'),
    runsApiUrl: api.url,
    extra: {
      KAFKA_BROKERS: kafka.oauthBrokers,
      KAFKA_SASL_MECHANISM: 'oauthbearer',
      KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: tokens.tokenUrl,
      KAFKA_SASL_OAUTHBEARER_CLIENT_ID: CLIENT_ID,
      KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: CLIENT_SECRET,
      KAFKA_SASL_OAUTHBEARER_SCOPE: 'kafka',
      KAFKA_SASL_OAUTHBEARER_AUDIENCE: AUDIENCE,
    },
  });
  world = { tenant, groupId, api, env, processes: [] };
  return world;
}

async function start(w: World, role: 'ingest' | 'worker') {
  const p = await startRelayProcess(role, w.env, `oauth-${w.tenant}-${role}`);
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

async function expectDelivered(w: World, key: string): Promise<void> {
  const handle = client.workflow.getHandle(workflowId(w.tenant, key));
  await waitFor(() => handle.describe().then(() => true), { what: `the workflow of ${key} to exist` });
  expect(await handle.result()).toEqual({ run_id: w.api.runs.get(key), admission: 'created' });
}

/** A process or command that must stop: `code` and exactly one `poimen-relay:` line, no secret anywhere. */
function expectOneClearLine(res: CliResult, code: number, pattern: RegExp): void {
  const logs = path.join(REPO_ROOT, 'test-artifacts', 'logs');
  fs.mkdirSync(logs, { recursive: true });
  fs.writeFileSync(
    path.join(logs, `oauth-cli-${Date.now()}.log`),
    `exit ${res.code}\n${res.stderr}${res.stdout}`,
  );
  const lines = res.stderr.split('\n').filter((l) => l.startsWith('poimen-relay:'));
  expect({ code: res.code, lines }).toEqual({ code, lines: [expect.stringMatching(pattern)] });
  expect(`${res.stderr}${res.stdout}`).not.toMatch(/wrong-secret|relay-client-secret|\n\s+at /);
}

describe('Kafka SASL/OAUTHBEARER (client credentials, RS256 tokens checked against a JWKS)', () => {
  test('the ingester and the worker deliver and dead-letter over OAUTHBEARER, presenting fresh tokens as they expire', async () => {
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
    await expectDelivered(w, 'ok-1');
    // The malformed record is the ingester's dead letter, the refused dispatch the worker's.
    const dlq = topics.dlq(w.tenant);
    await waitFor(async () => (await readTopicToEnd(plain, dlq)).length === 2, {
      timeoutMs: 120_000,
      what: 'both dead letters',
    });
    expect((await readTopicToEnd(plain, dlq)).map((r) => r?.type).sort()).toEqual([
      'dispatch_failure',
      'malformed_dispatch',
    ]);
    await waitFor(async () => (await committed(w)).join() === '3', { what: 'all three offsets committed' });
    const granted = tokens.grants.filter((g) => g.status === 200);
    expect(granted.length).toBeGreaterThan(0);
    expect(granted.every((g) => g.auth === 'basic' && g.form['scope'] === 'kafka')).toBe(true);

    // Past the first tokens' expiry: the broker has made every connection re-authenticate since, and the
    // relay's next dispatch and dead letter still go through, on tokens granted after the first ones.
    const firstGrants = tokens.grants.length;
    await new Promise((r) => setTimeout(r, (TOKEN_LIFETIME_S + 5) * 1000));
    w.api.scriptFor('refused-2', { kind: 'status', status: 422, body: '{"error":"unknown workflow_ref"}' });
    await producer.send({
      topic: topics.dispatch(w.tenant),
      acks: -1,
      messages: [
        { key: `${w.tenant}:ok-2`, value: dispatch('ok-2') },
        { key: `${w.tenant}:refused-2`, value: dispatch('refused-2') },
      ],
    });
    await expectDelivered(w, 'ok-2');
    await waitFor(async () => (await readTopicToEnd(plain, dlq)).length === 3, {
      timeoutMs: 120_000,
      what: 'the second dead letter',
    });
    await waitFor(async () => (await committed(w)).join() === '5', { what: 'all five offsets committed' });
    expect(tokens.grants.length).toBeGreaterThan(firstGrants);
  });

  test('a wrong client secret or no endpoint stops the ingester with one line; an unreachable endpoint or an untrusted token fails a command with one', async () => {
    const w = await createWorld();
    await producer.send({
      topic: topics.dispatch(w.tenant),
      acks: -1,
      messages: [{ key: `${w.tenant}:never-1`, value: dispatch('never-1') }],
    });
    const base = { ...w.env, METRICS_PORT: '0' };
    expectOneClearLine(
      await runCli(['ingest'], { ...base, KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 'wrong-secret' }, 120_000),
      2,
      /KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL http:\/\/127\.0\.0\.1:\d+\/token refused the client credentials grant of client "poimen-relay": HTTP 401 invalid_client$/,
    );
    expect(tokens.grants.some((g) => g.status === 401)).toBe(true);

    const noEndpoint: NodeJS.ProcessEnv = { ...base };
    delete noEndpoint.KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL;
    expectOneClearLine(
      await runCli(['ingest'], noEndpoint, 60_000),
      2,
      /KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL is required when KAFKA_SASL_MECHANISM=oauthbearer$/,
    );

    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    expectOneClearLine(
      await runCli(
        ['topics', 'list'],
        { ...base, KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: `http://127.0.0.1:${port}/token` },
        60_000,
      ),
      4,
      new RegExp(
        `KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL http://127\\.0\\.0\\.1:${port}/token is unreachable \\(ECONNREFUSED\\)$`,
      ),
    );

    // A token endpoint the brokers do not trust: its tokens are signed by a key not in the JWKS they check against,
    // so no request gets through. kafkajs's OAUTHBEARER takes the brokers' rejection of a token for success and
    // fails on the next request, so a command reports the brokers unreachable rather than the token refused.
    const stranger = await OAuthServer.start({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      issuer: ISSUER,
      audience: AUDIENCE,
    });
    try {
      expectOneClearLine(
        await runCli(
          ['topics', 'list'],
          { ...base, KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: stranger.tokenUrl },
          60_000,
        ),
        4,
        /Kafka at 127\.0\.0\.1:\d+ is unreachable \(.+\)$/,
      );
      expect(stranger.grants.map((g) => g.status)).toContain(200);
    } finally {
      await stranger.close();
    }

    // Nothing committed (the group may be the broker's first: its offsets topic can still be loading).
    await waitFor(async () => (await committed(w).catch(() => [])).join() === '-1', {
      what: 'the offsets of a group that never committed',
    });
    expect(w.api.requests).toHaveLength(0);
  });
});
