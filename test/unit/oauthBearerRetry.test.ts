/**
 * A token endpoint that is busy or slow for a moment (408, 429, 5xx) is retried with backoff, a `Retry-After` it
 * sends honoured up to a bound, and at worst reported as a failure the ingester waits out; only the other 4xx are
 * refusals. Against the real node:http token endpoint of test/support/oauthServer.ts, with a clock and a sleep
 * the test drives (each wait recorded, none taken).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { withKafkaAdmin } from '../../src/cli/kafkaAdmin';
import type { OAuthClientCredentials } from '../../src/config';
import { loadRelayConfig } from '../../src/config';
import { UnreachableError } from '../../src/errors';
import { kafkaAccessProblem } from '../../src/kafka/errors';
import { OAuthTokenError, OAuthTokenProvider } from '../../src/kafka/oauthBearer';
import { tokenEndpointPerTest } from '../support/tokenEndpoint';

const SECRET = 'the-client-secret';
const endpoint = tokenEndpointPerTest({ clientId: 'relay', clientSecret: SECRET, lifetimeS: 100 });

/** A provider whose clock and sleep the test drives: every wait is recorded and moves the clock at once. */
function provider(): { provider: OAuthTokenProvider; waits: number[]; advance: (ms: number) => void } {
  let t = Date.now();
  const waits: number[] = [];
  const creds: OAuthClientCredentials = endpoint.credentials();
  const p = new OAuthTokenProvider(creds, {
    now: () => t,
    sleep: (ms: number) => {
      waits.push(ms);
      t += ms;
      return Promise.resolve();
    },
  });
  return { provider: p, waits, advance: (ms) => (t += ms) };
}

async function failure(p: Promise<unknown>): Promise<OAuthTokenError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OAuthTokenError);
  return err as OAuthTokenError;
}

test.each([
  [429, 'slow_down'],
  [408, 'request_timeout'],
  [503, 'temporarily_unavailable'],
])('a %i is retried after the Retry-After it asks for, and the token is got', async (status, error) => {
  endpoint.server.failWith = { status, error, retryAfter: '2', times: 1 };
  const { provider: p, waits } = provider();
  expect((await p.token()).value.split('.')).toHaveLength(3);
  expect(endpoint.server.grants.map((g) => g.status)).toEqual([status, 200]);
  expect(waits).toEqual([2_000]);
});

test('without Retry-After the waits grow; a Retry-After of an hour is waited 30 s at most', async () => {
  endpoint.server.failWith = { status: 502, error: 'bad_gateway', times: 3 };
  const a = provider();
  await a.provider.token();
  expect(endpoint.server.grants.map((g) => g.status)).toEqual([502, 502, 502, 200]);
  expect(a.waits).toEqual([1_000, 2_000, 4_000]);

  endpoint.server.failWith = { status: 429, error: 'slow_down', retryAfter: '3600', times: 1 };
  const b = provider();
  await b.provider.token();
  expect(b.waits).toEqual([30_000]);
});

test('an endpoint busy past the retry budget is a failure to wait out, not a refusal; it is not asked again early', async () => {
  endpoint.server.failWith = { status: 429, error: 'slow_down', retryAfter: '20' };
  const { provider: p, waits, advance } = provider();
  const err = await failure(p.token());
  expect(err.message).toBe(
    `KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL ${endpoint.server.tokenUrl} answered HTTP 429`,
  );
  expect(err).toMatchObject({ refused: false, retriable: true });
  // 20 s waited once; a second 20 s would pass the 30 s budget.
  expect(waits).toEqual([20_000]);
  expect(endpoint.server.grants).toHaveLength(2);
  const cfg = loadRelayConfig('ingester', {
    KAFKA_SASL_MECHANISM: 'oauthbearer',
    KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: endpoint.server.tokenUrl,
    KAFKA_SASL_OAUTHBEARER_CLIENT_ID: 'relay',
    KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: SECRET,
  }).kafka;
  expect(kafkaAccessProblem(err, cfg)).toBeUndefined();

  // Asked again before the endpoint's Retry-After has passed: the same failure, no grant sent.
  expect((await failure(p.token())).message).toBe(err.message);
  expect(endpoint.server.grants).toHaveLength(2);
  endpoint.server.failWith = undefined;
  advance(20_000);
  await p.token();
  expect(endpoint.server.grants.map((g) => g.status)).toEqual([429, 429, 200]);
});

test.each([400, 401, 403, 404])('a %i is a refusal: reported at once, not retried', async (status) => {
  endpoint.server.failWith = { status, error: 'invalid_client' };
  const { provider: p, waits } = provider();
  expect(await failure(p.token())).toMatchObject({ refused: true, retriable: false });
  expect(endpoint.server.grants).toHaveLength(1);
  expect(waits).toEqual([]);
});

test('a refusal is given again without asking for 30 s: a restarting consumer does not ask at every connection', async () => {
  endpoint.server.failWith = { status: 401, error: 'invalid_client' };
  const { provider: p, advance } = provider();
  const first = await failure(p.token());
  advance(29_000);
  for (let i = 0; i < 3; i++) expect(await failure(p.token())).toBe(first);
  expect(endpoint.server.grants).toHaveLength(1);
  // Once the hold is over the endpoint is asked again: credentials fixed at the endpoint are used.
  endpoint.server.failWith = undefined;
  advance(1_000);
  await p.token();
  expect(endpoint.server.grants.map((g) => g.status)).toEqual([401, 200]);
});

test("a command that stops waiting while the token endpoint is retried names the endpoint's failure", async () => {
  const closed = http.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const env = {
    KAFKA_BROKERS: `127.0.0.1:${port}`,
    KAFKA_SASL_MECHANISM: 'oauthbearer',
    KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: `http://127.0.0.1:${port}/token`,
    KAFKA_SASL_OAUTHBEARER_CLIENT_ID: 'relay',
    KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: SECRET,
    POIMEN_CLI_CONNECT_TIMEOUT_MS: '1500',
  };
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const err = await withKafkaAdmin(() => Promise.resolve()).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(UnreachableError);
    expect(err?.message).toBe(
      `KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL http://127.0.0.1:${port}/token is unreachable (ECONNREFUSED)`,
    );
  } finally {
    for (const name of Object.keys(env)) delete process.env[name];
    Object.assign(process.env, saved);
  }
});

test('a refused refresh while the cached token is valid is asked again 10 s on, not held 30 s past the token', async () => {
  const { provider: p, advance } = provider();
  const first = (await p.token()).value;
  // Past the refresh point (80 % of 100 s): the cached token is still given, a refresh goes out and is refused.
  advance(81_000);
  endpoint.server.failWith = { status: 403, error: 'access_denied' };
  expect((await p.token()).value).toBe(first);
  const settled = async () => {
    for (let i = 0; i < 50 && endpoint.server.grants.length < 2; i++)
      await new Promise((r) => setTimeout(r, 20));
  };
  await settled();
  expect(endpoint.server.grants.map((g) => g.status)).toEqual([200, 403]);
  expect(p.lastFailure()?.refused).toBe(true);
  // 10 s on, the token still valid (91 s of 100): a handshake's call asks again, and the endpoint has recovered.
  endpoint.server.failWith = undefined;
  advance(10_000);
  expect((await p.token()).value).toBe(first);
  for (let i = 0; i < 50 && endpoint.server.grants.length < 3; i++)
    await new Promise((r) => setTimeout(r, 20));
  expect(endpoint.server.grants.map((g) => g.status)).toEqual([200, 403, 200]);
  expect((await p.token()).value).not.toBe(first);
});

test('handshakes during a failed refresh set one retry timer between them, not one each', async () => {
  let t = Date.now();
  const timers: { run: () => void; ms: number }[] = [];
  const p = new OAuthTokenProvider(endpoint.credentials(), {
    now: () => t,
    sleep: () => Promise.resolve(),
    schedule: (run, ms) => void timers.push({ run, ms }),
  });
  endpoint.server.opts.lifetimeS = 1000;
  const first = (await p.token()).value;
  expect(timers).toHaveLength(1); // the refresh at 80 %
  t += 801_000;
  endpoint.server.failWith = { status: 403, error: 'access_denied' };
  const grantsSettle = async (n: number) => {
    for (let i = 0; i < 50 && endpoint.server.grants.length < n; i++)
      await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 20));
  };
  expect((await p.token()).value).toBe(first);
  await grantsSettle(2);
  // Twenty handshakes while the refusal is held: the cached token each time, no request, and one timer in all.
  for (let i = 0; i < 20; i++) {
    t += 100;
    expect((await p.token()).value).toBe(first);
    await new Promise((r) => setImmediate(r));
  }
  await new Promise((r) => setTimeout(r, 20));
  expect(endpoint.server.grants.map((g) => g.status)).toEqual([200, 403]);
  expect(timers).toHaveLength(2);
  // The timer asks again, is refused again, and sets the next one; that one finds the endpoint recovered.
  t += timers[1]!.ms;
  timers[1]!.run();
  await grantsSettle(3);
  expect(endpoint.server.grants.map((g) => g.status)).toEqual([200, 403, 403]);
  expect(timers).toHaveLength(3);
  endpoint.server.failWith = undefined;
  t += timers[2]!.ms;
  timers[2]!.run();
  await grantsSettle(4);
  expect(endpoint.server.grants.map((g) => g.status)).toEqual([200, 403, 403, 200]);
  expect((await p.token()).value).not.toBe(first);
});
