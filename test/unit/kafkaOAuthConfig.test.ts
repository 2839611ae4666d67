/**
 * KAFKA_SASL_MECHANISM=oauthbearer: its variables read and checked at start (a missing one is one line naming it;
 * one set without the mechanism is refused, as is a user name or password set with it; the client secret never
 * echoed, shown only as set), handed to kafkajs as its `oauthBearerProvider`, and a failed grant named by the
 * endpoint variable: a refusal stops the ingester like refused credentials, an unreachable endpoint fails a
 * command as unreachable. The provider itself: oauthBearer.test.ts; end to end: test/it_kafka_oauthbearer.test.ts.
 */
import { type Env, type KafkaConfig, loadRelayConfig } from '../../src/config';
import { explainRelayConfig } from '../../src/config/effective';
import { AccessRefusedError, ConfigError, UnreachableError } from '../../src/errors';
import { kafkaSaslOptions } from '../../src/kafka/client';
import { classifyKafkaError, kafkaAccessProblem } from '../../src/kafka/errors';
import { OAuthTokenError } from '../../src/kafka/oauthBearer';
import { isSecretName } from '../../src/redact';

const OAUTH: Env = {
  KAFKA_SASL_MECHANISM: 'oauthbearer',
  KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: 'https://idp.example.com/oauth2/token',
  KAFKA_SASL_OAUTHBEARER_CLIENT_ID: 'poimen-relay',
  KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 'the-client-secret',
};

function failure(env: Env): string {
  try {
    loadRelayConfig('ingester', env);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('the configuration was accepted');
}

describe('KAFKA_SASL_MECHANISM=oauthbearer', () => {
  test('the endpoint, id and secret make the client credentials; HTTP Basic unless told otherwise', () => {
    expect(loadRelayConfig('worker', OAUTH).kafka.sasl).toEqual({
      mechanism: 'oauthbearer',
      oauth: {
        tokenEndpointUrl: 'https://idp.example.com/oauth2/token',
        clientId: 'poimen-relay',
        clientSecret: 'the-client-secret',
        clientAuth: 'client_secret_basic',
      },
    });
    const full = loadRelayConfig('cli', {
      ...OAUTH,
      KAFKA_SASL_OAUTHBEARER_CLIENT_AUTH: 'client_secret_post',
      KAFKA_SASL_OAUTHBEARER_SCOPE: 'kafka:read kafka:write',
      KAFKA_SASL_OAUTHBEARER_AUDIENCE: 'https://kafka.example.com',
    }).kafka.sasl;
    expect(full).toMatchObject({
      oauth: {
        clientAuth: 'client_secret_post',
        scope: 'kafka:read kafka:write',
        audience: 'https://kafka.example.com',
      },
    });
  });

  test.each([
    'KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL',
    'KAFKA_SASL_OAUTHBEARER_CLIENT_ID',
    'KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET',
  ])('without %s start stops with one line naming it', (name) => {
    const env = { ...OAUTH };
    delete env[name];
    expect(failure(env)).toBe(
      `invalid configuration: ${name} is required when KAFKA_SASL_MECHANISM=oauthbearer`,
    );
  });

  test('bad values are named; the secret is never echoed', () => {
    expect(failure({ ...OAUTH, KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: 'idp.example.com/token' })).toMatch(
      /^invalid configuration: KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL = "idp\.example\.com\/token": /,
    );
    expect(failure({ ...OAUTH, KAFKA_SASL_OAUTHBEARER_CLIENT_AUTH: 'basic' })).toBe(
      'invalid configuration: KAFKA_SASL_OAUTHBEARER_CLIENT_AUTH = "basic": must be client_secret_basic or client_secret_post',
    );
    expect(failure({ ...OAUTH, KAFKA_SASL_OAUTHBEARER_SCOPE: 'a  b' })).toMatch(
      /KAFKA_SASL_OAUTHBEARER_SCOPE = "a {2}b": must be scopes separated by single spaces$/,
    );
    expect(failure({ ...OAUTH, KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 'replace-me' })).toBe(
      'invalid configuration: KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET is a placeholder: set the real credential (docs/operations.md#the-secret)',
    );
  });

  test('an OAuth variable without the mechanism (or with another) is refused, not ignored', () => {
    expect(failure({ KAFKA_SASL_OAUTHBEARER_CLIENT_ID: 'poimen-relay' })).toBe(
      'invalid configuration: KAFKA_SASL_OAUTHBEARER_CLIENT_ID is set but KAFKA_SASL_MECHANISM is not oauthbearer',
    );
    expect(
      failure({
        ...OAUTH,
        KAFKA_SASL_MECHANISM: 'scram-sha-512',
        KAFKA_SASL_USERNAME: 'u',
        KAFKA_SASL_PASSWORD: 'p',
      }),
    ).toMatch(
      /KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL is set but KAFKA_SASL_MECHANISM is not oauthbearer$/,
    );
  });

  test('a user name or password set with oauthbearer is refused, not ignored, in one line naming them', () => {
    const uses = 'KAFKA_SASL_OAUTHBEARER_CLIENT_ID and KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET';
    expect(failure({ ...OAUTH, KAFKA_SASL_USERNAME: 'relay' })).toBe(
      `invalid configuration: KAFKA_SASL_USERNAME is set but KAFKA_SASL_MECHANISM is oauthbearer, which uses ${uses}`,
    );
    expect(failure({ ...OAUTH, KAFKA_SASL_PASSWORD: 'the-password' })).toBe(
      `invalid configuration: KAFKA_SASL_PASSWORD is set but KAFKA_SASL_MECHANISM is oauthbearer, which uses ${uses}`,
    );
    const both = failure({ ...OAUTH, KAFKA_SASL_USERNAME: 'relay', KAFKA_SASL_PASSWORD: 'the-password' });
    expect(both).toBe(
      `invalid configuration: KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD are set but KAFKA_SASL_MECHANISM is oauthbearer, which uses ${uses}`,
    );
    expect(both).not.toContain('the-password');
    // Empty is unset (the example Secret has both keys, empty): accepted.
    expect(
      loadRelayConfig('ingester', { ...OAUTH, KAFKA_SASL_USERNAME: '', KAFKA_SASL_PASSWORD: ' ' }).kafka.sasl,
    ).toMatchObject({ mechanism: 'oauthbearer' });
  });

  test('the effective configuration shows the endpoint and the id, and the secret only as set', () => {
    const { settings } = explainRelayConfig('ingester', OAUTH);
    const shown = Object.fromEntries(settings.map((s) => [s.name, s.value]));
    expect(shown).toMatchObject({
      KAFKA_SASL_MECHANISM: 'oauthbearer',
      KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: 'https://idp.example.com/oauth2/token',
      KAFKA_SASL_OAUTHBEARER_CLIENT_ID: 'poimen-relay',
      KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 'set',
      KAFKA_SASL_OAUTHBEARER_SCOPE: null,
    });
    expect(isSecretName('KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET')).toBe(true);
    expect(isSecretName('KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL')).toBe(false);
  });

  test('kafkajs gets the oauthbearer mechanism and a provider, one per configuration (one token cache)', () => {
    const cfg = loadRelayConfig('worker', OAUTH).kafka;
    const a = kafkaSaslOptions(cfg);
    expect(a).toEqual({ mechanism: 'oauthbearer', oauthBearerProvider: expect.any(Function) });
    const b = kafkaSaslOptions(cfg);
    expect((b as { oauthBearerProvider: unknown }).oauthBearerProvider).toBe(
      (a as { oauthBearerProvider: unknown }).oauthBearerProvider,
    );
  });
});

describe('a failed grant, as kafkajs hands it back', () => {
  const cfg: KafkaConfig = loadRelayConfig('cli', OAUTH).kafka;
  /** As kafkajs's retrier wraps an error: KafkaJSNonRetriableError / NumberOfRetriesExceeded with `cause`. */
  const wrapped = (cause: Error) =>
    Object.assign(new Error(cause.message), { name: 'KafkaJSNumberOfRetriesExceeded', cause });
  const refused = new OAuthTokenError(
    'https://idp.example.com/oauth2/token refused the client credentials grant of client "poimen-relay": HTTP 401 invalid_client',
    true,
  );
  const unreachable = new OAuthTokenError(
    'https://idp.example.com/oauth2/token is unreachable (ENOTFOUND)',
    false,
  );

  test('a refusal stops the ingester with one line naming the endpoint variable and the status', () => {
    expect(kafkaAccessProblem(wrapped(refused), cfg)).toEqual({
      variable: 'KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL',
      reason: refused.reason,
    });
    const err = classifyKafkaError(wrapped(refused), cfg);
    expect(err).toBeInstanceOf(AccessRefusedError);
    expect((err as Error).message).toBe(`KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL ${refused.reason}`);
  });

  test('an unreachable endpoint is waited out by the ingester and is "unreachable" to a command', () => {
    expect(kafkaAccessProblem(wrapped(unreachable), cfg)).toBeUndefined();
    const err = classifyKafkaError(wrapped(unreachable), cfg);
    expect(err).toBeInstanceOf(UnreachableError);
    expect((err as Error).message).toBe(
      'KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL https://idp.example.com/oauth2/token is unreachable (ENOTFOUND)',
    );
  });

  test('a SASL login Kafka refuses names the mechanism and the client, never the secret', () => {
    const sasl = Object.assign(new Error('SASL OAUTHBEARER mechanism is not supported by the server'), {
      name: 'KafkaJSSASLAuthenticationError',
    });
    const problem = kafkaAccessProblem(sasl, cfg);
    expect(problem).toEqual({
      variable: 'KAFKA_SASL_MECHANISM',
      reason: `= oauthbearer was refused by Kafka at ${cfg.brokers.join(',')} (OAuth client "poimen-relay": authentication failed)`,
    });
    expect(JSON.stringify(problem)).not.toContain('the-client-secret');
  });
});
