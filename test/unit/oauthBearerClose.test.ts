/**
 * A process done with Kafka closes its token provider (createIngester and createWorker do, after their Kafka
 * clients): a grant still being retried against an endpoint that is down ends at once, so the endpoint's
 * Retry-After (up to 30 s of retries) does not keep the process from exiting, and nothing is asked again.
 * Against the real node:http token endpoint of test/support/oauthServer.ts, with real timers.
 */
import { OAuthTokenError, OAuthTokenProvider } from '../../src/kafka/oauthBearer';
import { tokenEndpointPerTest } from '../support/tokenEndpoint';

const SECRET = 'the-client-secret';
const endpoint = tokenEndpointPerTest({ clientId: 'relay', clientSecret: SECRET, lifetimeS: 100 });
const creds = () => endpoint.credentials();

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let n = 0; n < 200 && !ok(); n++) await new Promise((r) => setTimeout(r, 10));
  if (!ok()) throw new Error(`not seen: ${what}`);
}

test('closing ends a grant waiting out a Retry-After at once, and asks nothing more', async () => {
  endpoint.server.failWith = { status: 503, error: 'temporarily_unavailable', retryAfter: '20' };
  const p = new OAuthTokenProvider(creds());
  const started = performance.now();
  const token = p.token().then(
    () => undefined,
    (e: unknown) => e,
  );
  await until('the first grant', () => endpoint.server.grants.length === 1);
  p.close();
  const err = await token;
  expect(err).toBeInstanceOf(OAuthTokenError);
  expect((err as Error).message).toMatch(/closing/);
  // Not the 20 s the endpoint asked for.
  expect(performance.now() - started).toBeLessThan(5_000);
  expect(await p.token().catch((e: unknown) => e)).toBeInstanceOf(OAuthTokenError);
  expect(endpoint.server.grants).toHaveLength(1);
});

test('closing ends a grant whose answer has not come yet', async () => {
  let answer!: () => void;
  endpoint.server.answerAfter = new Promise<void>((resolve) => (answer = resolve));
  const p = new OAuthTokenProvider(creds(), { timeoutMs: 60_000 });
  const token = p.token().catch((e: unknown) => e);
  await until('the grant sent', () => endpoint.server.received > 0);
  p.close();
  expect(((await token) as Error).message).toMatch(/closing/);
  answer();
});

test('a token got before closing is still handed out while valid; no refresh is asked for', async () => {
  let t = Date.now();
  const p = new OAuthTokenProvider(creds(), { now: () => t });
  const first = (await p.token()).value;
  p.close();
  t += 90_000; // past the refresh point (80 % of 100 s), before expiry
  expect((await p.token()).value).toBe(first);
  await new Promise((r) => setTimeout(r, 50));
  expect(endpoint.server.grants).toHaveLength(1);
});

test("closing during a grant's last attempt ends it as closing, not as the endpoint's failure", async () => {
  endpoint.server.failWith = { status: 503, error: 'temporarily_unavailable', times: 3 };
  let sleeps = 0;
  let answer!: () => void;
  const p = new OAuthTokenProvider(creds(), {
    timeoutMs: 60_000,
    sleep: async () => {
      // After the third failure, the fourth (last) attempt gets no answer until the test says.
      if (++sleeps === 3) endpoint.server.answerAfter = new Promise<void>((resolve) => (answer = resolve));
    },
  });
  const token = p.token().catch((e: unknown) => e);
  await until('the last attempt sent', () => endpoint.server.received === 4);
  p.close();
  expect(((await token) as Error).message).toMatch(/closing/);
  answer();
});
