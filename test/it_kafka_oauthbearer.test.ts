/**
 * Kafka SASL/OAUTHBEARER as managed Kafka services use it, with the relay's real processes configured only by
 * environment variables: the relay gets its token from a test OAuth server by the client credentials grant
 * (test/support/oauthServer.ts, RS256 JWTs) and a real broker checks it against the server's JWKS
 * (test/support/oauthKafka.ts). Tokens live 30 s and the broker asks for re-authentication every 20 s, so a
 * dispatch sent after the first token expired proves the relay fetched and presented a fresh one. A token endpoint
 * down for longer than a token lives is ridden out by both processes, losing nothing. A wrong client secret, a
 * missing endpoint, an unreachable endpoint and a token signed by a key the broker does not trust each stop a
 * process or command with one line.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { topics, workflowId } from '../src/contract';
import { type CliResult, REPO_ROOT, runCli } from './support/cli';
import { readTopicToEnd } from './support/dlqTopic';
import {
  AUDIENCE,
  CLIENT_ID,
  CLIENT_SECRET,
  ISSUER,
  type OAuthStack,
  type OAuthWorld,
  committed,
  createOAuthWorld,
  endOAuthWorld,
  expectDelivered,
  publish,
  startOAuthStack,
  startRole,
  stopOAuthStack,
} from './support/oauthRelay';
import { OAuthServer } from './support/oauthServer';
import { waitFor } from './support/wait';

jest.setTimeout(300_000);

const TOKEN_LIFETIME_S = 30;

let stack: OAuthStack;
beforeAll(async () => {
  stack = await startOAuthStack('it-kafka-oauth', { tokenLifetimeS: TOKEN_LIFETIME_S, reauthMs: 20_000 });
}, 300_000);
afterAll(() => stopOAuthStack(stack));

let world: OAuthWorld | undefined;
afterEach(async () => {
  await endOAuthWorld(world);
  world = undefined;
});

async function createWorld(): Promise<OAuthWorld> {
  world = await createOAuthWorld(stack);
  return world;
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
    await startRole(w, 'worker');
    await startRole(w, 'ingest');
    await publish(w, [{ key: 'ok-1' }, { key: 'bad-1', value: '{not json' }, { key: 'refused-1' }]);
    await expectDelivered(w, 'ok-1');
    // The malformed record is the ingester's dead letter, the refused dispatch the worker's.
    const dlq = topics.dlq(w.tenant);
    await waitFor(async () => (await readTopicToEnd(stack.plain, dlq)).length === 2, {
      timeoutMs: 120_000,
      what: 'both dead letters',
    });
    expect((await readTopicToEnd(stack.plain, dlq)).map((r) => r?.type).sort()).toEqual([
      'dispatch_failure',
      'malformed_dispatch',
    ]);
    await waitFor(async () => (await committed(w)).join() === '3', { what: 'all three offsets committed' });
    const granted = stack.tokens.grants.filter((g) => g.status === 200);
    expect(granted.length).toBeGreaterThan(0);
    expect(granted.every((g) => g.auth === 'basic' && g.form['scope'] === 'kafka')).toBe(true);

    // Past the first tokens' expiry: the broker has made every connection re-authenticate since, and the
    // relay's next dispatch and dead letter still go through, on tokens granted after the first ones.
    const firstGrants = stack.tokens.grants.length;
    await new Promise((r) => setTimeout(r, (TOKEN_LIFETIME_S + 5) * 1000));
    w.api.scriptFor('refused-2', { kind: 'status', status: 422, body: '{"error":"unknown workflow_ref"}' });
    await publish(w, [{ key: 'ok-2' }, { key: 'refused-2' }]);
    await expectDelivered(w, 'ok-2');
    await waitFor(async () => (await readTopicToEnd(stack.plain, dlq)).length === 3, {
      timeoutMs: 120_000,
      what: 'the second dead letter',
    });
    await waitFor(async () => (await committed(w)).join() === '5', { what: 'all five offsets committed' });
    expect(stack.tokens.grants.length).toBeGreaterThan(firstGrants);
  });

  test('a token endpoint down for longer than a token lives is ridden out: nothing exits, nothing is lost', async () => {
    const w = await createWorld();
    const exits: string[] = [];
    for (const p of [await startRole(w, 'worker'), await startRole(w, 'ingest')])
      void p.exited.then((code) => exits.push(`${p.role} exited ${code}`));
    await publish(w, [{ key: 'before' }]);
    await expectDelivered(w, 'before');

    // The endpoint answers 503 from now on. Every token the relay holds expires within a lifetime, and the broker,
    // asking each connection to re-authenticate every 20 s, then closes those that cannot present a fresh one. A
    // dispatch and a refusal arrive only after that: neither may start until the endpoint is back, and the
    // refusal's dead letter needs the worker's producer to connect again.
    stack.tokens.failWith = { status: 503, error: 'temporarily_unavailable' };
    const outageStart = stack.tokens.grants.length;
    const sleep = (s: number) => new Promise((r) => setTimeout(r, s * 1000));
    await sleep(TOKEN_LIFETIME_S + 10);
    w.api.scriptFor('refused-mid', { kind: 'status', status: 422, body: '{"error":"unknown workflow_ref"}' });
    await publish(w, [{ key: 'during' }, { key: 'refused-mid' }]);
    await sleep(30);
    // Held in Kafka, not lost and not started: the ingester could not reach the broker.
    const during = w.stack.client.workflow.getHandle(workflowId(w.tenant, 'during'));
    expect(
      await during.describe().then(
        () => 'started',
        (e: unknown) => (e as Error).name,
      ),
    ).toBe('WorkflowNotFoundError');
    expect(await committed(w)).toEqual(['1']);
    const refused = stack.tokens.grants.slice(outageStart).map((g) => g.status);
    expect(refused.length).toBeGreaterThan(0);
    expect(new Set(refused)).toEqual(new Set([503]));
    expect(exits).toEqual([]);

    stack.tokens.failWith = undefined;
    await expectDelivered(w, 'during');
    const dlq = topics.dlq(w.tenant);
    await waitFor(async () => (await readTopicToEnd(stack.plain, dlq)).length === 1, {
      timeoutMs: 120_000,
      what: 'the dead letter of the dispatch refused during the token outage',
    });
    expect((await readTopicToEnd(stack.plain, dlq)).map((r) => r?.type)).toEqual(['dispatch_failure']);
    // And a record published after the outage flows as any other.
    await publish(w, [{ key: 'after' }]);
    await expectDelivered(w, 'after');
    await waitFor(async () => (await committed(w)).join() === '4', { what: 'all four offsets committed' });
    // One call per dispatch: no record was started again into a second POST the API's dedup would absorb.
    for (const key of ['before', 'during', 'after']) expect(w.api.requestsFor(key)).toHaveLength(1);
    expect(exits).toEqual([]);
  });

  test('a wrong client secret or no endpoint stops the ingester with one line; an unreachable endpoint or an untrusted token fails a command with one', async () => {
    const w = await createWorld();
    await publish(w, [{ key: 'never-1' }]);
    const base = { ...w.env, METRICS_PORT: '0' };
    expectOneClearLine(
      await runCli(['ingest'], { ...base, KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 'wrong-secret' }, 120_000),
      2,
      /KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL http:\/\/127\.0\.0\.1:\d+\/token refused the client credentials grant of client "poimen-relay": HTTP 401 invalid_client$/,
    );
    expect(stack.tokens.grants.some((g) => g.status === 401)).toBe(true);

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
