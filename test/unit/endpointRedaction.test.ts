/**
 * The token endpoint's URL as every message shows it: without the user and password it may carry, whatever form
 * they take (an `@` in the password, a URL too broken to parse), and with the values of query parameters that
 * carry a credential redacted. Checked where the endpoint is named: the one-line error of an invalid value, the
 * effective configuration, and the token provider's failures.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Env, loadRelayConfig } from '../../src/config';
import { explainRelayConfig } from '../../src/config/effective';
import { ConfigError } from '../../src/errors';
import { OAuthTokenProvider } from '../../src/kafka/oauthBearer';
import { shownUrl } from '../../src/redact';

const ENDPOINT = 'KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL';
const OAUTH: Env = {
  KAFKA_SASL_MECHANISM: 'oauthbearer',
  [ENDPOINT]: 'https://idp.example.com/oauth2/token',
  KAFKA_SASL_OAUTHBEARER_CLIENT_ID: 'poimen-relay',
  KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 'the-client-secret',
};

function configError(endpoint: string): string {
  try {
    loadRelayConfig('ingester', { ...OAUTH, [ENDPOINT]: endpoint });
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('the configuration was accepted');
}

describe('an invalid endpoint URL is echoed without its credentials', () => {
  test.each([
    [
      'a scheme the relay does not take',
      'ftp://relay:hunter2@idp.example.com/token',
      'ftp://idp.example.com/token',
    ],
    [
      'a port out of range',
      'https://relay:hunter2@idp.example.com:99999/t',
      'https://idp.example.com:99999/t',
    ],
    [
      'an unencoded @ in the password',
      'https://relay:hun@ter2@idp.example.com:0x/t',
      'https://idp.example.com:0x/t',
    ],
    [
      'an unencoded / in the password',
      'https://relay:hun/ter2@idp.example.com:0x/t',
      'https://idp.example.com:0x/t',
    ],
    [
      'a secret query parameter',
      'ftp://idp.example.com/t?client_secret=hunter2&x=1',
      'ftp://idp.example.com/t?client_secret=<redacted>&x=1',
    ],
  ])('%s', (_what, endpoint, shown) => {
    const message = configError(endpoint);
    expect(message).toMatch(new RegExp(`^invalid configuration: ${ENDPOINT} = "[^"]*": `));
    expect(message).toContain(`= ${JSON.stringify(shown)}:`);
    expect(message).not.toMatch(/hunter2|ter2|relay:/);
  });
});

test('the effective configuration shows the endpoint without userinfo and secret query values', () => {
  const { settings } = explainRelayConfig('ingester', {
    ...OAUTH,
    [ENDPOINT]: 'https://relay:hun@ter2@idp.example.com/token?api_key=hunter2&tenant=acme',
  });
  const shown = settings.find((s) => s.name === ENDPOINT)?.value;
  expect(shown).toBe('https://idp.example.com/token?api_key=<redacted>&tenant=acme');
});

test("the token provider's failures name the endpoint without userinfo and secret query values", async () => {
  const closed = http.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const provider = new OAuthTokenProvider({
    tokenEndpointUrl: `http://relay:hun@ter2@127.0.0.1:${port}/token?access_token=hunter2`,
    clientId: 'poimen-relay',
    clientSecret: 'the-client-secret',
    clientAuth: 'client_secret_basic',
  });
  const err = await provider.token().then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  expect(err?.message).toBe(
    `${ENDPOINT} http://127.0.0.1:${port}/token?access_token=<redacted> is unreachable (ECONNREFUSED)`,
  );
});

test('a password holding a raw ? or # is taken out too, whether or not the whole parses as a URL', () => {
  expect(shownUrl('https://relay:se#cret@idp/token')).toBe('https://idp/token');
  expect(shownUrl('https://relay:se?cret@idp/token')).toBe('https://idp/token');
  // Parses (host "id", port 123, fragment "x@host/t"): the digits-only password passed validation.
  expect(shownUrl('https://id:123#x@host/t')).toBe('https://host/t');
  // An `@` in a query after the path is not userinfo.
  expect(shownUrl('https://host/p?email=a@b')).toBe('https://host/p?email=a@b');
});

test('text that is not a URL with credentials is shown as it is', () => {
  for (const text of [
    '127.0.0.1:7233',
    'relay@corp.example',
    'poimen-relay',
    'https://idp/t?tenant=acme#top',
  ])
    expect(shownUrl(text)).toBe(text);
  expect(shownUrl('https://idp/t#access_token=abc&state=1')).toBe(
    'https://idp/t#access_token=<redacted>&state=1',
  );
});
