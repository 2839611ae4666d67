/**
 * A relay on Kafka SASL/OAUTHBEARER for the suites that test it (it_kafka_oauthbearer, it_kafka_oauth_outage): a
 * test OAuth server granting RS256 JWTs by the client credentials grant (oauthServer.ts), a dedicated broker that
 * checks them against the server's JWKS and asks every connection to re-authenticate (oauthKafka.ts), the tests'
 * own clients on its PLAINTEXT listener (kafkaTooling.ts), and per test a tenant, a runs API double and the relay's
 * real processes configured only by environment variables.
 */
import fs from 'node:fs';
import path from 'node:path';
import { topics, workflowId } from '../../src/contract';
import { ensureTopics, tenantTopicSpecs } from '../../src/kafka/topics';
import { RunsApiDouble } from '../../devstack/runsApiDouble';
import { type Tooling, closeTooling, connectTooling } from './kafkaTooling';
import { uniqueName, uniqueTenant } from './names';
import { type OAuthKafka, startOAuthKafka } from './oauthKafka';
import { OAuthServer } from './oauthServer';
import { type RelayProcess, relayEnv, startRelayProcess } from './relay';
import { tempDir } from './tlsServices';
import { waitFor } from './wait';

export const CLIENT_ID = 'poimen-relay';
export const CLIENT_SECRET = 'relay-client-secret-9f2c';
export const ISSUER = 'http://poimen-test-issuer';
export const AUDIENCE = 'kafka-test-cluster';

export interface OAuthStackOptions {
  /** Lifetime of every token the server grants. */
  tokenLifetimeS: number;
  /** The broker's connections.max.reauth.ms: how often each connection must present a token again. */
  reauthMs: number;
}

export interface OAuthStack extends Tooling {
  dir: string;
  tokens: OAuthServer;
  kafka: OAuthKafka;
}

export async function startOAuthStack(name: string, o: OAuthStackOptions): Promise<OAuthStack> {
  const dir = tempDir(`poimen-${name}-`);
  const tokens = await OAuthServer.start({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    lifetimeS: o.tokenLifetimeS,
    issuer: ISSUER,
    audience: AUDIENCE,
  });
  const kafka = await startOAuthKafka(path.join(dir, 'kafka'), tokens, {
    issuer: ISSUER,
    audience: AUDIENCE,
    reauthMs: o.reauthMs,
  });
  return { dir, tokens, kafka, ...(await connectTooling(name, kafka.plainBrokers)) };
}

/** Stops what startOAuthStack started, whatever part of it a failed setup got to. */
export async function stopOAuthStack(s: Partial<OAuthStack>): Promise<void> {
  await closeTooling(s);
  await s.kafka?.stop();
  await s.tokens?.close();
  if (s.dir) fs.rmSync(s.dir, { recursive: true, force: true });
}

/** One test's tenant, consumer group, runs API and relay processes. */
export interface OAuthWorld {
  stack: OAuthStack;
  tenant: string;
  groupId: string;
  api: RunsApiDouble;
  env: NodeJS.ProcessEnv;
  processes: RelayProcess[];
}

export async function createOAuthWorld(stack: OAuthStack): Promise<OAuthWorld> {
  const tenant = uniqueTenant();
  await ensureTopics(stack.admin, tenantTopicSpecs(tenant, { partitions: 1 }));
  const api = await RunsApiDouble.start();
  const groupId = uniqueName('it-oauth-group');
  const env = relayEnv({
    tenantPattern: `^poimen\\.${tenant}\\.dispatch$`,
    groupId,
    taskQueue: uniqueName('it-oauth-tq'),
    runsApiUrl: api.url,
    extra: {
      KAFKA_BROKERS: stack.kafka.oauthBrokers,
      KAFKA_SASL_MECHANISM: 'oauthbearer',
      KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: stack.tokens.tokenUrl,
      KAFKA_SASL_OAUTHBEARER_CLIENT_ID: CLIENT_ID,
      KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: CLIENT_SECRET,
      KAFKA_SASL_OAUTHBEARER_SCOPE: 'kafka',
      KAFKA_SASL_OAUTHBEARER_AUDIENCE: AUDIENCE,
    },
  });
  return { stack, tenant, groupId, api, env, processes: [] };
}

export async function endOAuthWorld(w: OAuthWorld | undefined): Promise<void> {
  if (!w) return;
  await Promise.all(w.processes.map((p) => p.kill()));
  await w.api.close();
}

export async function startRole(w: OAuthWorld, role: 'ingest' | 'worker'): Promise<RelayProcess> {
  const p = await startRelayProcess(role, w.env, `oauth-${w.tenant}-${role}`);
  w.processes.push(p);
  return p;
}

/** Publishes dispatches (by key) and raw values to the world's dispatch topic, acknowledged by every replica. */
export async function publish(w: OAuthWorld, records: { key: string; value?: string }[]): Promise<void> {
  await w.stack.producer.send({
    topic: topics.dispatch(w.tenant),
    acks: -1,
    messages: records.map(({ key, value }) => ({ key: `${w.tenant}:${key}`, value: value ?? dispatch(key) })),
  });
}

function dispatch(key: string): string {
  return JSON.stringify({ workflow_ref: 'onboarding@v3', input: { n: 1 }, goal_id: null, dispatch_key: key });
}

export async function committed(w: OAuthWorld): Promise<string[]> {
  const [t] = await w.stack.admin.fetchOffsets({ groupId: w.groupId, topics: [topics.dispatch(w.tenant)] });
  return (t?.partitions ?? []).map((p) => p.offset);
}

export async function expectDelivered(w: OAuthWorld, key: string): Promise<void> {
  const handle = w.stack.client.workflow.getHandle(workflowId(w.tenant, key));
  await waitFor(() => handle.describe().then(() => true), { what: `the workflow of ${key} to exist` });
  expect(await handle.result()).toEqual({ run_id: w.api.runs.get(key), admission: 'created' });
}
