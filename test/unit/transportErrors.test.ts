import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { KafkaConfig } from '../../src/config';
import {
  KafkaJSConnectionError,
  KafkaJSGroupCoordinatorNotFound,
  KafkaJSNumberOfRetriesExceeded,
} from 'kafkajs';
import { ConfigError, UnreachableError } from '../../src/errors';
import { classifyKafkaError, kafkaAccessProblem } from '../../src/kafka/errors';
import { checkTemporalTls } from '../../src/temporal/connection';
import { handshakeFailure, tlsAlert, tlsRefusal } from '../../src/tlsErrors';

describe('TLS failures are told apart by error code', () => {
  test.each([
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'untrusted-server'],
    ['SELF_SIGNED_CERT_IN_CHAIN', 'untrusted-server'],
    ['CERT_HAS_EXPIRED', 'untrusted-server'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'untrusted-server'],
    // Alerts about the client certificate (or its absence): the server refuses us.
    ['ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', 'refused-by-server'],
    ['ERR_SSL_TLSV1_ALERT_UNKNOWN_CA', 'refused-by-server'],
    ['ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE', 'refused-by-server'],
    ['ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN', 'refused-by-server'],
    ['ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED', 'refused-by-server'],
    ['ERR_SSL_SSLV3_ALERT_CERTIFICATE_REVOKED', 'refused-by-server'],
    ['ERR_SSL_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE', 'refused-by-server'],
    ['ERR_SSL_TLSV1_ALERT_ACCESS_DENIED', 'refused-by-server'],
    // Node 24's OpenSSL names the record layer SSL/TLS where Node 20's said SSLV3.
    ['ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE', 'refused-by-server'],
    ['ERR_SSL_SSL/TLS_ALERT_HANDSHAKE_FAILURE', 'handshake'],
    // Other alerts: a disagreement that is not about certificates, so no client certificate is blamed.
    ['ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL', 'handshake'],
    ['ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION', 'handshake'],
    ['ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE', 'handshake'],
    ['ERR_SSL_TLSV1_ALERT_DECRYPT_ERROR', 'handshake'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', 'handshake'],
    // A server's own passing fault: waited out like an outage.
    ['ERR_SSL_TLSV1_ALERT_INTERNAL_ERROR', undefined],
    ['ECONNREFUSED', undefined],
    ['ECONNRESET', undefined],
    ['ETIMEDOUT', undefined],
    [undefined, undefined],
  ])('%s → %s', (code, expected) => {
    expect(tlsRefusal(code)).toBe(expected);
  });
});

describe('a handshake failure names the alert the server sent', () => {
  test.each([
    ['ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL', 'NO_APPLICATION_PROTOCOL'],
    ['ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', 'CERTIFICATE_REQUIRED'],
    ['ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE', 'HANDSHAKE_FAILURE'],
    ['ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE', 'BAD_CERTIFICATE'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', undefined],
    ['ECONNREFUSED', undefined],
    [42, undefined],
  ])('%s → alert %s', (code, alert) => {
    expect(tlsAlert(code)).toBe(alert);
  });

  test('in the message: the alert by name, and the code', () => {
    expect(handshakeFailure('ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL')).toBe(
      'TLS handshake refused with alert no_application_protocol (ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL)',
    );
    expect(handshakeFailure('ERR_SSL_WRONG_VERSION_NUMBER')).toBe(
      'TLS handshake failed (ERR_SSL_WRONG_VERSION_NUMBER)',
    );
  });
});

describe('kafkaAccessProblem: refused credentials and certificates stop the ingester; outages do not', () => {
  const cfg: KafkaConfig = {
    brokers: ['k1:9094'],
    clientId: 'c',
    groupId: 'g',
    ssl: true,
    sslCaPath: '/etc/ca.pem',
    sasl: { mechanism: 'scram-sha-256', username: 'relay', password: 'hunter2' },
  };
  const err = (name: string, props: Record<string, unknown> = {}) =>
    Object.assign(new Error('message text is never looked at'), { name, ...props });

  test('a SASL authentication failure names the credential variables, never the password', () => {
    const problem = kafkaAccessProblem(err('KafkaJSSASLAuthenticationError'), cfg);
    expect(problem).toEqual({
      variable: 'KAFKA_SASL_USERNAME/KAFKA_SASL_PASSWORD',
      reason: 'were rejected by Kafka at k1:9094 (scram-sha-256 user "relay": authentication failed)',
    });
    expect(JSON.stringify(problem)).not.toContain('hunter2');
  });

  test("a certificate failure is found through the retrier's cause chain and names KAFKA_SSL_CA", () => {
    const wrapped = err('KafkaJSNumberOfRetriesExceeded', {
      cause: err('KafkaJSConnectionError', { code: 'SELF_SIGNED_CERT_IN_CHAIN' }),
    });
    expect(kafkaAccessProblem(wrapped, cfg)).toEqual({
      variable: 'KAFKA_SSL_CA',
      reason: 'does not fit Kafka at k1:9094: TLS handshake failed (SELF_SIGNED_CERT_IN_CHAIN)',
    });
    const { sslCaPath: _unused, ...noCa } = cfg;
    expect(kafkaAccessProblem(wrapped, noCa)?.variable).toBe('KAFKA_SSL');
  });

  test('brokers that refuse the client certificate name its variables; a refused handshake blames TLS, not the CA', () => {
    const refused = err('KafkaJSConnectionError', { code: 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED' });
    expect(kafkaAccessProblem(refused, cfg)).toEqual({
      variable: 'KAFKA_SSL_CERT/KAFKA_SSL_KEY',
      reason:
        'are unset but Kafka at k1:9094 requires a client certificate (ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED)',
    });
    const version = err('KafkaJSConnectionError', { code: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION' });
    expect(kafkaAccessProblem(version, cfg)).toEqual({
      variable: 'KAFKA_SSL',
      reason:
        'is on but with Kafka at k1:9094: TLS handshake refused with alert protocol_version (ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION)',
    });
  });

  test.each([
    [
      'a server-side internal_error alert',
      err('KafkaJSConnectionError', { code: 'ERR_SSL_TLSV1_ALERT_INTERNAL_ERROR' }),
    ],
    ['a refused connection', err('KafkaJSConnectionError', { code: 'ECONNREFUSED' })],
    ['a timeout', err('KafkaJSConnectionError')],
    ['a protocol error', err('KafkaJSProtocolError', { type: 'UNKNOWN_TOPIC_OR_PARTITION', code: 3 })],
    ['not an error', 'boom'],
  ])('%s is an outage to wait out', (_what, e) => {
    expect(kafkaAccessProblem(e, cfg)).toBeUndefined();
  });

  test('without TLS, a TLS-looking code is not read as a certificate problem', () => {
    const e = err('KafkaJSConnectionError', { code: 'ERR_SSL_WRONG_VERSION_NUMBER' });
    expect(kafkaAccessProblem(e, { ...cfg, ssl: false })).toBeUndefined();
  });
});

describe('checkTemporalTls: files that do not load are one ConfigError line, not a stack trace', () => {
  test('a certificate that stopped loading after start rejects with a ConfigError (nothing thrown synchronously)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'poimen-tls-check-'));
    try {
      const garbage = path.join(dir, 'garbage.pem');
      fs.writeFileSync(garbage, 'this is not PEM\n');
      // tlsConnect throws on the files before it dials: the port is never used.
      const check = checkTemporalTls({
        address: '127.0.0.1:1',
        namespace: 'default',
        taskQueue: 'q',
        uiUrl: 'http://127.0.0.1:8233',
        tls: { certPath: garbage, keyPath: garbage },
      });
      await expect(check).rejects.toThrow(ConfigError);
      await expect(check).rejects.toThrow(
        /^invalid configuration: TEMPORAL_TLS_CERT\/TEMPORAL_TLS_KEY\/TEMPORAL_TLS_CA cannot be loaded \(ERR_OSSL_\w+\)$/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a command's Kafka failure as one line", () => {
  // As kafkajs throws it (its typings leave out the message its constructor takes).
  const coordinatorNotFound = () =>
    new (KafkaJSGroupCoordinatorNotFound as unknown as new (m: string) => Error)(
      'Failed to find group coordinator',
    );
  const cfg = {
    brokers: ['k1:9094'],
    clientId: 'c',
    groupId: 'g',
    sasl: { mechanism: 'scram-sha-256', username: 'ops', password: 'hunter2' },
  } as KafkaConfig;

  test.each([
    ['as kafkajs bails with it', () => coordinatorNotFound()],
    [
      'after retries',
      () => {
        const e = coordinatorNotFound();
        return new KafkaJSNumberOfRetriesExceeded(e, { retryCount: 5, retryTime: 3000, cause: e } as never);
      },
    ],
  ])('no coordinator for the group (%s) names the group ACL besides a starting cluster', (_, lost) => {
    // kafkajs drops a refused lookup (GROUP_AUTHORIZATION_FAILED) and reports only this.
    const out = classifyKafkaError(lost(), cfg);
    expect(out).toBeInstanceOf(UnreachableError);
    expect((out as Error).message).toBe(
      'Kafka at k1:9094 named no coordinator for the consumer group: unreachable or still starting, or user "ops" may not Describe/Read the group (check its ACLs)',
    );
  });

  test('a broker that does not answer stays "unreachable", with its cause', () => {
    const out = classifyKafkaError(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED'), cfg);
    expect((out as Error).message).toBe('Kafka at k1:9094 is unreachable (connect ECONNREFUSED)');
  });
});
