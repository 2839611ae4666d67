import type { KafkaConfig } from '../../src/config';
import { kafkaAccessProblem } from '../../src/kafka/client';
import { tlsRefusal } from '../../src/tlsErrors';

describe('TLS failures are told apart by error code', () => {
  test.each([
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'untrusted-server'],
    ['SELF_SIGNED_CERT_IN_CHAIN', 'untrusted-server'],
    ['CERT_HAS_EXPIRED', 'untrusted-server'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'untrusted-server'],
    ['ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', 'refused-by-server'],
    ['ERR_SSL_TLSV1_ALERT_UNKNOWN_CA', 'refused-by-server'],
    ['ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE', 'refused-by-server'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', 'handshake'],
    ['ECONNREFUSED', undefined],
    ['ECONNRESET', undefined],
    ['ETIMEDOUT', undefined],
    [undefined, undefined],
  ])('%s → %s', (code, expected) => {
    expect(tlsRefusal(code)).toBe(expected);
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

  test.each([
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
