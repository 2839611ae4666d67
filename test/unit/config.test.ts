/* eslint-disable max-lines -- one case per environment variable check of the config loader */
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import { makeSelfSigned } from '../support/selfSigned';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../src/errors';
import { loadRelayConfig } from '../../src/config';
import { headerToken, port, read } from '../../src/config/schema';

// Certificate variables must name files whose PEM content loads: a real self-signed pair (which is its own CA),
// a second key that does not match it, and files that are not what they claim to be.
const pemDir = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-config-test-'));
const inDir = (name: string) => path.join(pemDir, name);
const [certPem, keyPem, caPem, otherKeyPem] = [
  inDir('c.pem'),
  inDir('k.pem'),
  inDir('ca.pem'),
  inDir('k2.pem'),
];
const garbagePem = inDir('garbage.pem');
const brokenCertPem = inDir('broken-cert.pem');
const encryptedKeyPem = inDir('encrypted-key.pem');
beforeAll(() => {
  makeSelfSigned(certPem, keyPem, 'poimen-config-test');
  fs.copyFileSync(certPem, caPem);
  const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  fs.writeFileSync(otherKeyPem, other.privateKey.export({ type: 'pkcs8', format: 'pem' }));
  fs.writeFileSync(
    encryptedKeyPem,
    other.privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'x' }),
  );
  fs.writeFileSync(garbagePem, 'this is not PEM\n');
  // Looks like a certificate to a grep, but its body is no DER.
  fs.writeFileSync(brokenCertPem, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
});
afterAll(() => fs.rmSync(pemDir, { recursive: true, force: true }));

describe('configuration (contract §8)', () => {
  test('defaults match the SPEC', () => {
    const cfg = loadRelayConfig('ingester', {});
    expect(cfg.kafka.brokers).toEqual(['127.0.0.1:9092']);
    expect(cfg.kafka.groupId).toBe('poimen-inbox-relay');
    expect(cfg.temporal).toEqual({
      address: '127.0.0.1:7233',
      namespace: 'default',
      taskQueue: 'poimen-dispatch',
      uiUrl: 'http://127.0.0.1:8233',
    });
    expect(cfg.runsApi).toEqual({ url: 'http://127.0.0.1:8080', timeoutMs: 10_000 });
    expect(cfg.retry).toEqual({
      initialIntervalMs: 1000,
      backoff: 2,
      maxIntervalMs: 300_000,
      maxAttempts: 0,
      maxDurationMs: 86_400_000,
    });
    expect(loadRelayConfig('worker', {}).worker).toMatchObject({
      breaker: { failures: 5, probeIntervalMs: 2_000 },
    });
    expect(loadRelayConfig('worker', {}).worker.runsApiMaxRps).toBeUndefined();
    expect(cfg.dispatchMaxBytes).toBe(1024 * 1024);
    expect(cfg.dispatchTopicPattern.test('poimen.acme.dispatch')).toBe(true);
    expect(cfg.dispatchTopicPattern.test('poimen.acme.dispatch.dlq')).toBe(false);
    expect(cfg.metricsPort).toBe(9464);
    expect(loadRelayConfig('worker', {}).metricsPort).toBe(9465);
  });

  test('every variable of the SPEC is read', () => {
    const cfg = loadRelayConfig('worker', {
      KAFKA_BROKERS: 'k1:9092, k2:9093',
      KAFKA_CLIENT_ID: 'c',
      KAFKA_GROUP_ID: 'g',
      KAFKA_SSL: 'true',
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: 'u',
      KAFKA_SASL_PASSWORD: 'p',
      DISPATCH_TOPIC_PATTERN: '^poimen\\.x\\.dispatch$',
      DISPATCH_MAX_BYTES: '2048',
      TEMPORAL_ADDRESS: 'temporal:7233',
      TEMPORAL_NAMESPACE: 'ns',
      TEMPORAL_TASK_QUEUE: 'q',
      TEMPORAL_API_KEY: 'key',
      TEMPORAL_TLS_CERT: certPem,
      TEMPORAL_TLS_KEY: keyPem,
      TEMPORAL_TLS_CA: caPem,
      RUNS_API_URL: 'https://api.example.test/',
      RUNS_API_TOKEN: 'tok',
      RUNS_API_TIMEOUT_MS: '500',
      RETRY_INITIAL_INTERVAL_MS: '10',
      RETRY_BACKOFF: '1.5',
      RETRY_MAX_INTERVAL_MS: '100',
      RETRY_MAX_ATTEMPTS: '3',
      RETRY_MAX_DURATION_MS: '90000',
      RUNS_API_MAX_RPS: '20.5',
      METRICS_PORT: '0',
      LOG_LEVEL: 'debug',
    });
    expect(cfg.kafka).toEqual({
      brokers: ['k1:9092', 'k2:9093'],
      clientId: 'c',
      groupId: 'g',
      ssl: true,
      sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' },
      decodedBatchMaxBytes: 32 * 1024 * 1024,
    });
    expect(cfg.temporal).toEqual({
      address: 'temporal:7233',
      namespace: 'ns',
      taskQueue: 'q',
      uiUrl: 'http://127.0.0.1:8233',
      apiKey: 'key',
      tls: { certPath: certPem, keyPath: keyPem, caPath: caPem },
    });
    expect(cfg.runsApi).toEqual({ url: 'https://api.example.test', token: 'tok', timeoutMs: 500 });
    expect(cfg.retry).toEqual({
      initialIntervalMs: 10,
      backoff: 1.5,
      maxIntervalMs: 100,
      maxAttempts: 3,
      maxDurationMs: 90_000,
    });
    expect(cfg.worker.runsApiMaxRps).toBe(20.5);
    expect(cfg.dispatchMaxBytes).toBe(2048);
    expect(cfg.metricsPort).toBe(0);
    expect(cfg.logLevel).toBe('debug');
  });

  test.each([
    ['KAFKA_BROKERS', 'not-a-host-port'],
    ['KAFKA_SSL', 'maybe'],
    ['KAFKA_SASL_MECHANISM', 'gssapi'],
    ['DISPATCH_TOPIC_PATTERN', '(unclosed'],
    ['DISPATCH_MAX_BYTES', '-1'],
    ['TEMPORAL_ADDRESS', 'no-port'],
    ['RUNS_API_URL', 'ftp://x'],
    ['RUNS_API_TIMEOUT_MS', '10s'],
    ['RETRY_BACKOFF', '0.5'],
    ['RETRY_MAX_ATTEMPTS', '-1'],
    ['RETRY_MAX_DURATION_MS', '500'],
    ['RUNS_API_MAX_RPS', '0'],
    ['RUNS_API_MAX_RPS', 'fast'],
    ['METRICS_PORT', '70000'],
    ['LOG_LEVEL', 'loud'],
    ['RUNS_API_TOKEN', 'tok\nen'],
    ['RUNS_API_TOKEN', 'tök'],
  ])('a bad %s stops start-up with one line naming it', (variable, value) => {
    let caught: unknown;
    try {
      loadRelayConfig('ingester', { [variable]: value });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).variable).toBe(variable);
    expect((caught as ConfigError).message).toContain(variable);
    expect((caught as ConfigError).message.split('\n')).toHaveLength(1);
  });

  // A Secret applied from an example file still holding its placeholders must not start a relay that then
  // fails every call with 401: each credential variable is checked, whether or not its feature is on.
  test.each([
    ['RUNS_API_TOKEN', 'REPLACE_ME'],
    ['RUNS_API_TOKEN', 'changeme'],
    ['RUNS_API_TOKEN', '<your-token>'],
    ['KAFKA_SASL_USERNAME', 'replace-me'],
    ['KAFKA_SASL_PASSWORD', 'CHANGE_ME'],
    ['TEMPORAL_API_KEY', '${TEMPORAL_API_KEY}'],
    ['TEMPORAL_API_KEY', 'xxxxxxxx'],
  ])('a placeholder %s (%s) stops start-up with one line naming it, without the value', (variable, value) => {
    let caught: unknown;
    try {
      loadRelayConfig('worker', { [variable]: value });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).variable).toBe(variable);
    expect((caught as ConfigError).message).toMatch(
      new RegExp(`^invalid configuration: ${variable} is a placeholder`),
    );
    expect((caught as ConfigError).message).not.toContain(value);
    expect((caught as ConfigError).message.split('\n')).toHaveLength(1);
  });

  test('real-looking credentials that merely contain common words are accepted', () => {
    for (const token of ['replace-me-not-9f2c1e', 'todo-service-token-1', 'x', 'tok']) {
      expect(loadRelayConfig('worker', { RUNS_API_TOKEN: token }).runsApi.token).toBe(token);
    }
  });

  test('SASL without credentials names the missing variable; a secret is never echoed', () => {
    expect(() =>
      loadRelayConfig('ingester', { KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u' }),
    ).toThrow(/KAFKA_SASL_PASSWORD/);
    expect(() => loadRelayConfig('ingester', { TEMPORAL_TLS_CERT: certPem })).toThrow(/TEMPORAL_TLS_KEY/);
  });
});

describe('POIMEN_TENANT_WEIGHTS (fairness weights per tenant)', () => {
  const weights = (v: string) =>
    loadRelayConfig('ingester', { POIMEN_TENANT_WEIGHTS: v }).ingest.tenantWeights;
  test('tenant=weight pairs; none named: every tenant weighs 1 (Temporal default)', () => {
    expect(loadRelayConfig('ingester', {}).ingest.tenantWeights).toEqual({});
    expect(weights('acme=2, beta=0.5')).toEqual({ acme: 2, beta: 0.5 });
  });
  test.each([
    ['acme', 'is not tenant=weight'],
    ['Acme=2', 'is not tenant=weight'],
    ['acme=-1', 'is not tenant=weight'],
    ['acme=0', 'between 0.001 and 1000'],
    ['acme=1001', 'between 0.001 and 1000'],
    ['acme=1,acme=2', 'named twice'],
  ])('%s is refused at start with one line naming the variable', (v, why) => {
    expect(() => weights(v)).toThrow(ConfigError);
    expect(() => weights(v)).toThrow(/POIMEN_TENANT_WEIGHTS/);
    expect(() => weights(v)).toThrow(why);
  });
});

describe('tracing from the standard OpenTelemetry variables', () => {
  const tracing = (env: Record<string, string>, role: 'ingester' | 'worker' = 'worker') =>
    loadRelayConfig(role, env).tracing;
  test('off unless an OTLP endpoint is set; the traces endpoint wins and is used as it is', () => {
    expect(tracing({})).toBeUndefined();
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318/' })).toMatchObject({
      tracesUrl: 'http://otel:4318/v1/traces',
      serviceName: 'poimen-relay-worker',
    });
    expect(
      tracing(
        {
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4318/custom',
          OTEL_SERVICE_NAME: 'relay-eu',
        },
        'ingester',
      ),
    ).toMatchObject({ tracesUrl: 'http://traces:4318/custom', serviceName: 'relay-eu' });
    expect(
      tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318', OTEL_SDK_DISABLED: 'true' }),
    ).toBeUndefined();
  });
  test('a bad endpoint stops the process at start with one line naming it', () => {
    expect(() => tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'otel:4318' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
  });
});

describe('transport security settings (contract §8 plus KAFKA_SSL_CA, RUNS_API_CA)', () => {
  const missing = path.join(pemDir, 'does-not-exist.pem');

  test("KAFKA_SSL_CA names the brokers' CA file and implies TLS", () => {
    expect(loadRelayConfig('ingester', { KAFKA_SSL_CA: caPem }).kafka).toMatchObject({
      ssl: true,
      sslCaPath: caPem,
    });
    expect(loadRelayConfig('ingester', { KAFKA_SSL: 'true', KAFKA_SSL_CA: caPem }).kafka.ssl).toBe(true);
    expect(loadRelayConfig('ingester', {}).kafka).not.toHaveProperty('sslCaPath');
    expect(() => loadRelayConfig('ingester', { KAFKA_SSL: 'false', KAFKA_SSL_CA: caPem })).toThrow(
      'invalid configuration: KAFKA_SSL_CA is set but KAFKA_SSL is false',
    );
  });

  test("RUNS_API_CA names the runs API's CA file and needs an https URL", () => {
    const env = { RUNS_API_URL: 'https://runs.internal', RUNS_API_CA: caPem };
    expect(loadRelayConfig('worker', env).runsApi).toEqual({
      url: 'https://runs.internal',
      timeoutMs: 10_000,
      caPath: caPem,
    });
    expect(() => loadRelayConfig('worker', { RUNS_API_CA: caPem })).toThrow(
      'invalid configuration: RUNS_API_CA is set but RUNS_API_URL is not https://',
    );
  });

  test.each([
    'KAFKA_SSL_CA',
    'RUNS_API_CA',
    'TEMPORAL_TLS_CA',
    'TEMPORAL_TLS_CERT',
    'TEMPORAL_TLS_KEY',
    'NODE_EXTRA_CA_CERTS',
  ])('%s naming a file that cannot be read stops start-up with one line', (variable) => {
    const env: Record<string, string> = { RUNS_API_URL: 'https://runs.internal', [variable]: missing };
    if (variable === 'TEMPORAL_TLS_CERT') env.TEMPORAL_TLS_KEY = keyPem;
    if (variable === 'TEMPORAL_TLS_KEY') env.TEMPORAL_TLS_CERT = certPem;
    expect(() => loadRelayConfig('worker', env)).toThrow(
      `invalid configuration: ${variable} = ${JSON.stringify(missing)}: is not a readable file`,
    );
    // A directory is not a certificate file either.
    expect(() => loadRelayConfig('worker', { ...env, [variable]: pemDir })).toThrow(/is not a readable file/);
  });
  const CA_VARIABLES = ['KAFKA_SSL_CA', 'RUNS_API_CA', 'TEMPORAL_TLS_CA', 'NODE_EXTRA_CA_CERTS'];
  const envWith = (variable: string, file: string): Record<string, string> => ({
    RUNS_API_URL: 'https://runs.internal',
    TEMPORAL_TLS_CERT: certPem,
    TEMPORAL_TLS_KEY: keyPem,
    [variable]: file,
  });
  const failure = (env: Record<string, string>): ConfigError => {
    try {
      loadRelayConfig('worker', env);
    } catch (err) {
      if (err instanceof ConfigError) return err;
      throw err;
    }
    throw new Error('the configuration was accepted');
  };

  test('real PEM files load', () => {
    const env = envWith('TEMPORAL_TLS_CA', caPem);
    for (const v of CA_VARIABLES) env[v] = caPem;
    expect(loadRelayConfig('worker', env).temporal.tls).toEqual({
      certPath: certPem,
      keyPath: keyPem,
      caPath: caPem,
    });
  });

  test.each(CA_VARIABLES)(
    '%s holding no certificate, or a broken one, stops start-up naming it',
    (variable) => {
      const garbage = failure(envWith(variable, garbagePem));
      expect(garbage.variable).toBe(variable);
      expect(garbage.message).toBe(
        `invalid configuration: ${variable} = ${JSON.stringify(garbagePem)}: holds no PEM certificate (ERR_OSSL_PEM_NO_START_LINE)`,
      );
      // A key is not a CA either.
      expect(failure(envWith(variable, keyPem)).message).toMatch(
        /holds no PEM certificate \(ERR_OSSL_\w+\)$/,
      );
      const broken = failure(envWith(variable, brokenCertPem));
      expect(broken.variable).toBe(variable);
      expect(broken.message).toMatch(/: certificate 1 of 1 does not load \(ERR_OSSL_\w+\)$/);
      expect(broken.message.split('\n')).toHaveLength(1);
    },
  );

  test('TEMPORAL_TLS_CERT or TEMPORAL_TLS_KEY that does not load stops start-up naming it, with the OpenSSL code', () => {
    const cert = failure({ TEMPORAL_TLS_CERT: garbagePem, TEMPORAL_TLS_KEY: keyPem });
    expect(cert.variable).toBe('TEMPORAL_TLS_CERT');
    expect(cert.message).toBe(
      `invalid configuration: TEMPORAL_TLS_CERT = ${JSON.stringify(garbagePem)}: does not load as a PEM certificate (ERR_OSSL_PEM_NO_START_LINE)`,
    );
    // The files swapped: each is refused for what it is not.
    expect(failure({ TEMPORAL_TLS_CERT: keyPem, TEMPORAL_TLS_KEY: certPem }).variable).toBe(
      'TEMPORAL_TLS_CERT',
    );
    const key = failure({ TEMPORAL_TLS_CERT: certPem, TEMPORAL_TLS_KEY: certPem });
    expect(key.variable).toBe('TEMPORAL_TLS_KEY');
    expect(key.message).toMatch(/: does not load as an unencrypted PEM private key \(ERR_OSSL_\w+\)$/);
    const encrypted = failure({ TEMPORAL_TLS_CERT: certPem, TEMPORAL_TLS_KEY: encryptedKeyPem });
    expect(encrypted.variable).toBe('TEMPORAL_TLS_KEY');
    expect(encrypted.message).toMatch(/\(ERR_OSSL_\w+\)$/);
  });

  test('a key that is not the certificate’s stops start-up naming TEMPORAL_TLS_KEY', () => {
    const mismatch = failure({ TEMPORAL_TLS_CERT: certPem, TEMPORAL_TLS_KEY: otherKeyPem });
    expect(mismatch.variable).toBe('TEMPORAL_TLS_KEY');
    expect(mismatch.message).toBe(
      `invalid configuration: TEMPORAL_TLS_KEY = ${JSON.stringify(otherKeyPem)}: does not match TEMPORAL_TLS_CERT (ERR_OSSL_X509_KEY_VALUES_MISMATCH)`,
    );
  });
});

describe('a bad secret value is refused without echoing it', () => {
  test.each(['RUNS_API_TOKEN', 'KAFKA_SASL_PASSWORD', 'TEMPORAL_API_KEY'])(
    '%s: the one line names the variable and shows <redacted>, never the value',
    (name) => {
      const value = 'hunter2-s3cret\u0007';
      const err = (() => {
        try {
          read({ [name]: value }, name, headerToken);
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain(`${name} = <redacted>: `);
      expect((err as Error).message).not.toContain('hunter2');
    },
  );

  test('a value that is not a secret is quoted, so the operator sees what was wrong', () => {
    expect(() => read({ METRICS_PORT: 'abc' }, 'METRICS_PORT', port)).toThrow('METRICS_PORT = "abc"');
  });
});
