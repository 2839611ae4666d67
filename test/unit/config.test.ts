import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../src/errors';
import { loadRelayConfig } from '../../src/config';
import { runCli } from '../support/cli';

// Certificate variables must name readable files; these stand in for PEM files (content is not parsed).
const pemDir = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-config-test-'));
const pem = (name: string) => {
  const file = path.join(pemDir, name);
  fs.writeFileSync(file, '-----BEGIN CERTIFICATE-----\n');
  return file;
};
const [certPem, keyPem, caPem] = [pem('c.pem'), pem('k.pem'), pem('ca.pem')];
afterAll(() => fs.rmSync(pemDir, { recursive: true, force: true }));

describe('configuration (SPEC §8)', () => {
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
      maxIntervalMs: 60_000,
      maxAttempts: 10,
    });
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
      METRICS_PORT: '0',
      LOG_LEVEL: 'debug',
    });
    expect(cfg.kafka).toEqual({
      brokers: ['k1:9092', 'k2:9093'],
      clientId: 'c',
      groupId: 'g',
      ssl: true,
      sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' },
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
    expect(cfg.retry).toEqual({ initialIntervalMs: 10, backoff: 1.5, maxIntervalMs: 100, maxAttempts: 3 });
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
    ['RETRY_MAX_ATTEMPTS', '0'],
    ['METRICS_PORT', '70000'],
    ['LOG_LEVEL', 'loud'],
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

  test('SASL without credentials names the missing variable; a secret is never echoed', () => {
    expect(() =>
      loadRelayConfig('ingester', { KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u' }),
    ).toThrow(/KAFKA_SASL_PASSWORD/);
    expect(() => loadRelayConfig('ingester', { TEMPORAL_TLS_CERT: certPem })).toThrow(/TEMPORAL_TLS_KEY/);
  });

  test('the process exits with one clear line when a value is bad', async () => {
    for (const role of ['worker', 'ingest']) {
      const res = await runCli(
        [role],
        { ...process.env, METRICS_PORT: 'abc', RUNS_API_TOKEN: 'super-secret' },
        30_000,
      );
      expect(res.code).toBe(2);
      expect(res.stderr.trim()).toBe(
        'poimen-relay: invalid configuration: METRICS_PORT = "abc": must be a whole number',
      );
    }
  });
});

describe('transport security settings (SPEC §8 plus KAFKA_SSL_CA, RUNS_API_CA)', () => {
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
});
