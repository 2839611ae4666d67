/**
 * Rows of the env table for Kafka: where the brokers are and how to reach and authenticate to them (TLS, SASL),
 * and which dispatch records the ingester takes from them. Each row is the variable's one home: its name, meaning,
 * readers, flag, schema and default (envVar.ts).
 */
import { z } from 'zod';
import { DEFAULT_DISPATCH_TOPIC_PATTERN } from '../../contract/names';
import { KAFKA_USERS, parsed, perRole, rows } from '../envVar';
import { bool, httpUrl, intIn, nonEmpty, regex } from '../schema';
import { caFile, certFile, keyFile } from '../tls';

export const KAFKA = rows({
  KAFKA_BROKERS: parsed({
    description: 'Kafka bootstrap brokers, host:port[,host:port]',
    readBy: KAFKA_USERS,
    connection: true,
    flagArg: '<host:port,...>',
    // Each broker is checked as host:port by the loader, which names the one that is not.
    schema: z.string(),
    default: '127.0.0.1:9092',
  }),
  KAFKA_CLIENT_ID: parsed({
    description: 'Kafka client id',
    readBy: KAFKA_USERS,
    connection: true,
    schema: nonEmpty,
    default: perRole({
      ingester: 'poimen-relay-ingester',
      worker: 'poimen-relay-worker',
      cli: 'poimen-relay-cli',
    }),
  }),
  KAFKA_GROUP_ID: parsed({
    description: "the ingester's consumer group",
    readBy: ['ingest'],
    flagArg: '<group>',
    schema: nonEmpty,
    default: 'poimen-inbox-relay',
  }),
  KAFKA_SSL: parsed({
    description: 'TLS to the brokers (true/false)',
    readBy: KAFKA_USERS,
    connection: true,
    // Unset: on when a CA or a client certificate is given (the loader derives it).
    schema: bool,
  }),
  KAFKA_SSL_CA: parsed({
    description: "PEM file of the CA(s) of the brokers' certificates",
    readBy: KAFKA_USERS,
    connection: true,
    schema: caFile,
  }),
  KAFKA_SSL_CERT: parsed({
    description: 'PEM client certificate for brokers that require one (mTLS), with KAFKA_SSL_KEY',
    readBy: KAFKA_USERS,
    connection: true,
    schema: certFile,
  }),
  KAFKA_SSL_KEY: parsed({
    description: 'PEM private key of KAFKA_SSL_CERT (unencrypted)',
    readBy: KAFKA_USERS,
    connection: true,
    schema: keyFile,
  }),
  KAFKA_SASL_MECHANISM: parsed({
    description:
      'plain, scram-sha-256, scram-sha-512 (user name, password) or oauthbearer (client credentials)',
    readBy: KAFKA_USERS,
    connection: true,
    schema: z.enum(['plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer'], {
      message: 'must be plain, scram-sha-256, scram-sha-512 or oauthbearer',
    }),
  }),
  KAFKA_SASL_USERNAME: parsed({
    description: 'SASL user name',
    readBy: KAFKA_USERS,
    connection: true,
    schema: nonEmpty,
  }),
  KAFKA_SASL_PASSWORD: parsed({
    description: 'SASL password (never logged)',
    readBy: KAFKA_USERS,
    connection: true,
    schema: nonEmpty,
  }),
  KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: parsed({
    description: "OAuth 2.0 token endpoint the relay's client credentials grant is POSTed to",
    readBy: KAFKA_USERS,
    connection: true,
    schema: httpUrl,
  }),
  KAFKA_SASL_OAUTHBEARER_CLIENT_ID: parsed({
    description: 'OAuth client id of the client credentials grant',
    readBy: KAFKA_USERS,
    connection: true,
    schema: nonEmpty,
  }),
  KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: parsed({
    description: 'OAuth client secret of the client credentials grant (never logged)',
    readBy: KAFKA_USERS,
    connection: true,
    schema: nonEmpty,
  }),
  KAFKA_SASL_OAUTHBEARER_CLIENT_AUTH: parsed({
    description: 'client_secret_basic (HTTP Basic, the default) or client_secret_post (in the form)',
    readBy: KAFKA_USERS,
    connection: true,
    schema: z.enum(['client_secret_basic', 'client_secret_post'], {
      message: 'must be client_secret_basic or client_secret_post',
    }),
    default: 'client_secret_basic',
  }),
  KAFKA_SASL_OAUTHBEARER_SCOPE: parsed({
    description: 'scopes asked for in the grant, space-separated (unset: not sent)',
    readBy: KAFKA_USERS,
    connection: true,
    // Space-separated printable ASCII without `"` or `\` (RFC 6749 §3.3).
    schema: z
      .string()
      .regex(
        /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/,
        'must be scopes separated by single spaces',
      ),
  }),
  KAFKA_SASL_OAUTHBEARER_AUDIENCE: parsed({
    description: 'audience form parameter of the grant, for providers that want one (unset: not sent)',
    readBy: KAFKA_USERS,
    connection: true,
    schema: nonEmpty,
  }),
  NODE_EXTRA_CA_CERTS: parsed({
    description: "Node's extra trusted CA file, checked at start",
    readBy: [...KAFKA_USERS, 'temporal-cli'],
    connection: true,
    // Node only warns when it cannot read the file; the loader stops the start instead.
    schema: caFile,
  }),
  DISPATCH_TOPIC_PATTERN: parsed({
    description: 'regular expression of the dispatch topics to drain',
    readBy: ['ingest'],
    flagArg: '<regex>',
    schema: regex,
    default: new RegExp(DEFAULT_DISPATCH_TOPIC_PATTERN),
  }),
  DISPATCH_MAX_BYTES: parsed({
    description: 'larger dispatch records are dead-lettered',
    readBy: ['ingest'],
    schema: intIn(1, 100 * 1024 * 1024),
    default: 1024 * 1024,
  }),
});
