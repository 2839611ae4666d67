/**
 * Kafka client certificates (KAFKA_SSL_CERT, KAFKA_SSL_KEY): read and checked at start like the other PEM
 * variables, handed to the Kafka client, and a broker's refusal of the certificate (or of its absence) named by
 * the variables. End to end: test/it_kafka_client_cert.test.ts.
 */
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type KafkaConfig, loadRelayConfig } from '../../src/config';
import { ConfigError } from '../../src/errors';
import { kafkaTlsOptions } from '../../src/kafka/client';
import { kafkaAccessProblem } from '../../src/kafka/errors';
import { makeSelfSigned } from '../support/selfSigned';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-kafka-cert-test-'));
const certPem = path.join(dir, 'client.pem');
const keyPem = path.join(dir, 'client.key');
const otherKeyPem = path.join(dir, 'other.key');
const missing = path.join(dir, 'missing.pem');
beforeAll(() => {
  makeSelfSigned(certPem, keyPem, 'poimen-relay');
  const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  fs.writeFileSync(otherKeyPem, other.privateKey.export({ type: 'pkcs8', format: 'pem' }));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function failure(env: Record<string, string>): ConfigError {
  try {
    loadRelayConfig('ingester', env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('the configuration was accepted');
}

describe('KAFKA_SSL_CERT / KAFKA_SSL_KEY', () => {
  test('a certificate and its key turn TLS on and reach the Kafka client', () => {
    const kafka = loadRelayConfig('ingester', { KAFKA_SSL_CERT: certPem, KAFKA_SSL_KEY: keyPem }).kafka;
    expect(kafka).toMatchObject({ ssl: true, sslCertPath: certPem, sslKeyPath: keyPem });
    expect(kafkaTlsOptions(kafka)).toEqual({
      cert: fs.readFileSync(certPem),
      key: fs.readFileSync(keyPem),
    });
    expect(kafkaTlsOptions({ ...kafka, sslCaPath: certPem })).toMatchObject({
      ca: [fs.readFileSync(certPem)],
    });
    expect(kafkaTlsOptions(loadRelayConfig('ingester', {}).kafka)).toBe(false);
    expect(kafkaTlsOptions(loadRelayConfig('ingester', { KAFKA_SSL: 'true' }).kafka)).toBe(true);
  });

  test.each(['KAFKA_SSL_CERT', 'KAFKA_SSL_KEY'])(
    '%s naming a file that cannot be read stops start-up with one line naming it',
    (variable) => {
      const env = { KAFKA_SSL_CERT: certPem, KAFKA_SSL_KEY: keyPem, [variable]: missing };
      const err = failure(env);
      expect(err.variable).toBe(variable);
      expect(err.message).toBe(
        `invalid configuration: ${variable} = ${JSON.stringify(missing)}: is not a readable file`,
      );
      expect(failure({ ...env, [variable]: dir }).message).toMatch(/is not a readable file$/);
    },
  );

  test('a certificate or key that does not load, or a pair that does not match, is refused naming the variable', () => {
    const swapped = failure({ KAFKA_SSL_CERT: keyPem, KAFKA_SSL_KEY: certPem });
    expect(swapped.variable).toBe('KAFKA_SSL_CERT');
    expect(swapped.message).toMatch(/: does not load as a PEM certificate \(ERR_OSSL_\w+\)$/);
    const mismatch = failure({ KAFKA_SSL_CERT: certPem, KAFKA_SSL_KEY: otherKeyPem });
    expect(mismatch.message).toBe(
      `invalid configuration: KAFKA_SSL_KEY = ${JSON.stringify(otherKeyPem)}: does not match KAFKA_SSL_CERT (ERR_OSSL_X509_KEY_VALUES_MISMATCH)`,
    );
  });

  test('one without the other, or with KAFKA_SSL=false, is refused', () => {
    expect(failure({ KAFKA_SSL_CERT: certPem }).message).toBe(
      'invalid configuration: KAFKA_SSL_KEY must be set together with KAFKA_SSL_CERT',
    );
    expect(failure({ KAFKA_SSL_KEY: keyPem }).message).toBe(
      'invalid configuration: KAFKA_SSL_CERT must be set together with KAFKA_SSL_KEY',
    );
    expect(failure({ KAFKA_SSL: 'false', KAFKA_SSL_CERT: certPem, KAFKA_SSL_KEY: keyPem }).message).toBe(
      'invalid configuration: KAFKA_SSL_CERT is set but KAFKA_SSL is false',
    );
  });
});

describe('kafkaAccessProblem: the brokers refuse the client certificate', () => {
  const cfg: KafkaConfig = { brokers: ['k1:9094'], clientId: 'c', groupId: 'g', ssl: true };
  const refused = Object.assign(new Error('text is never read'), {
    name: 'KafkaJSConnectionError',
    code: 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
  });

  test('none offered: the certificate variables are named as unset', () => {
    expect(kafkaAccessProblem(refused, cfg)).toEqual({
      variable: 'KAFKA_SSL_CERT/KAFKA_SSL_KEY',
      reason:
        'are unset but Kafka at k1:9094 requires a client certificate (ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED)',
    });
  });

  test('one offered: the certificate variables are named as refused', () => {
    const unknownCa = { ...refused, code: 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA' };
    expect(kafkaAccessProblem(unknownCa, { ...cfg, sslCertPath: '/c.pem', sslKeyPath: '/k.pem' })).toEqual({
      variable: 'KAFKA_SSL_CERT/KAFKA_SSL_KEY',
      reason: 'were refused by Kafka at k1:9094 (ERR_SSL_TLSV1_ALERT_UNKNOWN_CA)',
    });
  });
});
