/**
 * The OAUTHBEARER token provider is one per SASL setting, shared by every service a process makes from the same
 * configuration (an application embedding the relay may start a new worker before closing the old one). Each
 * service holds it while it runs (holdKafkaAuth); only the last one's release closes it, so a service closing
 * never leaves another one's clients without tokens.
 */
import type { KafkaConfig, OAuthClientCredentials } from '../../src/config';
import { holdKafkaAuth, kafkaSaslOptions } from '../../src/kafka/client';
import { tokenEndpointPerTest } from '../support/tokenEndpoint';

const endpoint = tokenEndpointPerTest({ clientId: 'relay', clientSecret: 's', lifetimeS: 1 });

type Provider = () => Promise<{ value: string }>;
const providerOf = (cfg: KafkaConfig): Provider =>
  (kafkaSaslOptions(cfg) as unknown as { oauthBearerProvider: Provider }).oauthBearerProvider;

function config(): KafkaConfig {
  const oauth: OAuthClientCredentials = endpoint.credentials();
  return {
    brokers: ['127.0.0.1:9092'],
    clientId: 'relay',
    groupId: 'g',
    ssl: false,
    sasl: { mechanism: 'oauthbearer', oauth },
  } as KafkaConfig;
}

test("one service's close leaves another service of the same configuration able to get tokens", async () => {
  const cfg = config();
  const releaseA = holdKafkaAuth(cfg);
  const a = providerOf(cfg);
  const releaseB = holdKafkaAuth(cfg);
  const b = providerOf(cfg);
  await a();
  releaseA();
  releaseA(); // idempotent: still one holder left
  await new Promise((r) => setTimeout(r, 1_200)); // the 1 s token has expired
  await expect(b()).resolves.toEqual({ value: expect.any(String) });
  releaseB();
  // The last release closed it: no token is asked for any more.
  const before = endpoint.server.grants.length;
  await new Promise((r) => setTimeout(r, 1_200));
  await expect(b()).rejects.toThrow(/closing/);
  expect(endpoint.server.grants).toHaveLength(before);
});

test('a service made after the last release gets a provider of its own', async () => {
  const cfg = config();
  holdKafkaAuth(cfg)();
  const release = holdKafkaAuth(cfg);
  await expect(providerOf(cfg)()).resolves.toEqual({ value: expect.any(String) });
  release();
});
