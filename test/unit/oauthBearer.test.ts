/**
 * The OAUTHBEARER token provider against a real token endpoint on 127.0.0.1 (test/support/oauthServer.ts): the
 * client credentials grant as sent (HTTP Basic or in the form, scope, audience), the token cached and fetched
 * again in the background once 80% of its lifetime has passed (a clock the test moves, a timer it runs), a valid
 * token handed out without waiting on the endpoint, each failure as one line naming the endpoint variable and the
 * status, without the secret, and a Kafka client that asks for its token before it dials a broker.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthClientCredentials } from '../../src/config';
import { loadRelayConfig } from '../../src/config';
import { createKafka } from '../../src/kafka/client';
import { type OAuthBearerToken, OAuthTokenError, OAuthTokenProvider } from '../../src/kafka/oauthBearer';
import { createLogger } from '../../src/logger';
import { tokenEndpointPerTest } from '../support/tokenEndpoint';

const SECRET = 's3cret: with+odd/chars';
const endpoint = tokenEndpointPerTest({ clientId: 'relay client', clientSecret: SECRET, lifetimeS: 100 });
const creds = (over: Partial<OAuthClientCredentials> = {}) => endpoint.credentials(over);

/** A clock the test moves by hand, starting at the real now (the server's `exp` is real time). */
function manualClock(): { now: () => number; advance: (ms: number) => void } {
  let t = Date.now();
  return { now: () => t, advance: (ms) => (t += ms) };
}

/** The token once a refresh running in the background has replaced `old` (2 s at most). */
async function replaced(provider: OAuthTokenProvider, old: OAuthBearerToken): Promise<OAuthBearerToken> {
  let token = await provider.token();
  for (let i = 0; i < 100 && token.value === old.value; i++) {
    await new Promise((r) => setTimeout(r, 20));
    token = await provider.token();
  }
  expect(token.value).not.toBe(old.value);
  return token;
}

/** The token endpoint again, answering without `expires_in` (the lifetime is then the JWT's `exp`). */
async function serveWithoutExpiresIn(): Promise<void> {
  await endpoint.restart({ omitExpiresIn: true });
}

/** No wait between the attempts of a grant (their pacing: oauthBearerRetry.test.ts). */
const noWaits = { sleep: () => Promise.resolve() };

async function failure(p: Promise<unknown>): Promise<OAuthTokenError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OAuthTokenError);
  return err as OAuthTokenError;
}

test('the grant goes by HTTP Basic with scope and audience; the token is cached until 80% of its lifetime', async () => {
  const clock = manualClock();
  const provider = new OAuthTokenProvider(
    creds({ scope: 'kafka.read kafka.write', audience: 'kafka' }),
    clock,
  );
  const first = await provider.token();
  expect(first.value.split('.')).toHaveLength(3);
  expect(endpoint.server.grants).toEqual([
    {
      auth: 'basic',
      form: { grant_type: 'client_credentials', scope: 'kafka.read kafka.write', audience: 'kafka' },
      status: 200,
    },
  ]);

  clock.advance(79_000);
  expect(await provider.token()).toEqual(first);
  expect(endpoint.server.grants).toHaveLength(1);

  // Past the refresh point: still the valid token at once, a new one got in the background for the next call.
  clock.advance(2_000);
  expect(await provider.token()).toEqual(first);
  await replaced(provider, first);
  expect(endpoint.server.grants).toHaveLength(2);
});

test('past 80% of its lifetime a valid token is handed out at once and refreshed in the background', async () => {
  const clock = manualClock();
  const provider = new OAuthTokenProvider(creds(), clock);
  const first = await provider.token();
  clock.advance(85_000);
  // A slow endpoint: a reconnect's SASL handshake (kafkajs asks midway) must not wait for it.
  let release = () => {};
  endpoint.server.answerAfter = new Promise<void>((r) => (release = r));
  const waited = new Promise((r) => setTimeout(() => r('waited for the endpoint'), 1_000).unref());
  expect(await Promise.race([provider.token(), waited])).toEqual(first);
  expect(await Promise.race([provider.token(), waited])).toEqual(first);
  release();
  await replaced(provider, first);
  expect(endpoint.server.grants).toHaveLength(2);
});

test('a timer refreshes the token at 80% of its lifetime, with no call to prompt it', async () => {
  const clock = manualClock();
  const timers: { run: () => void; ms: number }[] = [];
  const schedule = (run: () => void, ms: number) => void timers.push({ run, ms });
  const provider = new OAuthTokenProvider(creds(), { ...clock, schedule });
  const first = await provider.token();
  expect(timers.map((t) => t.ms)).toEqual([80_000]);
  // The clock is left before the refresh point, where a call would not refresh: only the timer does.
  timers[0]!.run();
  await replaced(provider, first);
  expect(endpoint.server.grants).toHaveLength(2);
  expect(timers.map((t) => t.ms)).toEqual([80_000, 80_000]);
  // A timer of a token since replaced does nothing.
  timers[0]!.run();
  await new Promise((r) => setTimeout(r, 50));
  expect(endpoint.server.grants).toHaveLength(2);
});

test('a background refresh that fails is asked again by a timer, so an idle client renews before expiry', async () => {
  const clock = manualClock();
  const timers: { run: () => void; ms: number }[] = [];
  const schedule = (run: () => void, ms: number) => void timers.push({ run, ms });
  const provider = new OAuthTokenProvider(creds(), { ...clock, ...noWaits, schedule });
  const first = await provider.token();
  endpoint.server.failWith = { status: 503, error: 'temporarily_unavailable' };
  timers[0]!.run();
  // The refresh fails (four attempts, held for the 8 s its last one called for): a timer asks again 10 s later.
  for (let i = 0; i < 100 && timers.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
  expect(timers.map((t) => t.ms)).toEqual([80_000, 10_000]);
  expect(await provider.token()).toEqual(first);
  endpoint.server.failWith = undefined;
  clock.advance(10_000);
  timers[1]!.run();
  await replaced(provider, first);
});

test('the refresh timer waits 10 s at least, so a token already due is not fetched in a loop', async () => {
  const timers: number[] = [];
  const schedule = (_run: () => void, ms: number) => void timers.push(ms);
  await serveWithoutExpiresIn();
  const clock = manualClock();
  clock.advance(200_000); // the endpoint's clock is behind: its JWT's exp looks past
  await new OAuthTokenProvider(creds(), { ...clock, schedule }).token();
  expect(timers).toEqual([10_000]);
});

test('client_secret_post sends the id and secret in the form, no Authorization header', async () => {
  const provider = new OAuthTokenProvider(creds({ clientAuth: 'client_secret_post' }));
  await provider.token();
  expect(endpoint.server.grants).toEqual([
    {
      auth: 'post',
      form: { grant_type: 'client_credentials', client_id: 'relay client', client_secret: SECRET },
      status: 200,
    },
  ]);
});

test('callers of the same moment share one grant', async () => {
  const provider = new OAuthTokenProvider(creds());
  const tokens = await Promise.all([provider.token(), provider.token(), provider.token()]);
  expect(new Set(tokens.map((t) => t.value)).size).toBe(1);
  expect(endpoint.server.grants).toHaveLength(1);
});

test("without expires_in, the JWT's exp sets the lifetime", async () => {
  await serveWithoutExpiresIn();
  const clock = manualClock();
  const provider = new OAuthTokenProvider(creds(), clock);
  await provider.token();
  clock.advance(75_000);
  await provider.token();
  expect(endpoint.server.grants).toHaveLength(1);
  clock.advance(10_000);
  await replaced(provider, await provider.token());
  expect(endpoint.server.grants).toHaveLength(2);
});

test('a refused grant (401) is one line naming the endpoint variable and the status, not retriable, no secret', async () => {
  const provider = new OAuthTokenProvider(creds({ clientSecret: `wrong-${SECRET}` }));
  const err = await failure(provider.token());
  expect(err.message).toBe(
    `KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL ${endpoint.server.tokenUrl} refused the client credentials grant of client "relay client": HTTP 401 invalid_client`,
  );
  expect(err).toMatchObject({ refused: true, retriable: false });
  expect(err.message).not.toContain('s3cret');
  expect(err.message).not.toContain('\n');
});

test('an unreachable endpoint and a 5xx are retriable failures naming the variable and the cause', async () => {
  const closed = http.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const gone = await failure(
    new OAuthTokenProvider(creds({ tokenEndpointUrl: `http://127.0.0.1:${port}/token` }), noWaits).token(),
  );
  expect(gone.message).toBe(
    `KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL http://127.0.0.1:${port}/token is unreachable (ECONNREFUSED)`,
  );
  expect(gone).toMatchObject({ refused: false, retriable: true });

  endpoint.server.failWith = { status: 503, error: 'temporarily_unavailable' };
  const down = await failure(new OAuthTokenProvider(creds(), noWaits).token());
  expect(down.message).toBe(
    `KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL ${endpoint.server.tokenUrl} answered HTTP 503`,
  );
  expect(down.refused).toBe(false);
});

test('an endpoint that never answers fails after the timeout', async () => {
  const silent = http.createServer(() => undefined);
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/token`;
  try {
    const err = await failure(
      new OAuthTokenProvider(creds({ tokenEndpointUrl: url }), { timeoutMs: 200, ...noWaits }).token(),
    );
    expect(err.message).toBe(
      `KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL ${url} is unreachable (no answer within 200 ms)`,
    );
  } finally {
    silent.closeAllConnections();
    await new Promise<void>((r) => silent.close(() => r()));
  }
});

test('a failed refresh keeps handing out the token while it has not expired, then fails', async () => {
  const clock = manualClock();
  const provider = new OAuthTokenProvider(creds(), { ...clock, ...noWaits });
  const first = await provider.token();
  endpoint.server.failWith = { status: 503, error: 'temporarily_unavailable' };
  clock.advance(90_000);
  expect(await provider.token()).toEqual(first);
  clock.advance(11_000);
  await failure(provider.token());
  endpoint.server.failWith = undefined;
  // The endpoint is asked again once the wait its last failure called for (8 s, the backoff after a fourth attempt) has passed.
  clock.advance(8_000);
  expect((await provider.token()).value).not.toBe(first.value);
});

test('a 200 answer without an access_token is a refusal (the URL is not a token endpoint)', async () => {
  const provider = new OAuthTokenProvider(creds({ tokenEndpointUrl: `${endpoint.server.url}/jwks` }));
  // GET-only path: the server answers 404, a refusal too.
  expect((await failure(provider.token())).refused).toBe(true);

  const html = http.createServer((_req, res) => res.end('<html>sign in</html>'));
  await new Promise<void>((r) => html.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(html.address() as AddressInfo).port}/token`;
  try {
    const err = await failure(new OAuthTokenProvider(creds({ tokenEndpointUrl: url })).token());
    expect(err.message).toBe(
      `KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL ${url} answered HTTP 200 without an access_token`,
    );
    expect(err.refused).toBe(true);
  } finally {
    await new Promise<void>((r) => html.close(() => r()));
  }
});

test('a Kafka client asks for its token before it dials a broker: a refused grant is the error of connect', async () => {
  // A broker port nobody listens on: were it dialled first, connect would fail with a connection error instead.
  const closed = http.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const cfg = loadRelayConfig('cli', {
    KAFKA_BROKERS: `127.0.0.1:${port}`,
    KAFKA_SASL_MECHANISM: 'oauthbearer',
    KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: endpoint.server.tokenUrl,
    KAFKA_SASL_OAUTHBEARER_CLIENT_ID: 'relay client',
    KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 'not-the-secret',
  });
  const kafka = createKafka(cfg.kafka, createLogger('test', 'silent'), { retry: { retries: 0 } });
  for (const client of [kafka.admin(), kafka.producer(), kafka.consumer({ groupId: 'g' })]) {
    const err = await failure(client.connect());
    expect(err.message).toMatch(
      /refused the client credentials grant of client "relay client": HTTP 401 invalid_client$/,
    );
  }
  expect(endpoint.server.grants.map((g) => g.status)).toEqual([401]); // one provider: the refusal held (oauthBearerRetry)
});
