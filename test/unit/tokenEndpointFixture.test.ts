/**
 * The per-test token endpoint (test/support/tokenEndpoint.ts): what one test changes on its endpoint never reaches
 * the next test's, whatever order jest runs them in.
 */
import { tokenEndpointPerTest } from '../support/tokenEndpoint';

const endpoint = tokenEndpointPerTest({ clientId: 'relay', clientSecret: 's', lifetimeS: 100 });

test('a test raises the lifetime of its endpoint (as oauthBearerRetry does)', () => {
  endpoint.server.opts.lifetimeS = 1000;
  expect(endpoint.server.opts.lifetimeS).toBe(1000);
});

test('the next test gets an endpoint with the lifetime the file asked for', () => {
  expect(endpoint.server.opts.lifetimeS).toBe(100);
});

test('a restart changes only what it names, for this test alone', async () => {
  const before = endpoint.server.tokenUrl;
  await endpoint.restart({ omitExpiresIn: true });
  expect(endpoint.server.tokenUrl).not.toBe(before);
  expect(endpoint.server.opts).toEqual({
    clientId: 'relay',
    clientSecret: 's',
    lifetimeS: 100,
    omitExpiresIn: true,
  });
});

test('after a restart, the next test has the file’s endpoint again', () => {
  expect(endpoint.server.opts.omitExpiresIn).toBeUndefined();
});
