/**
 * How the relay authenticates to Kafka by SASL (KAFKA_SASL_*): a user name and password (PLAIN, SCRAM), or an
 * OAuth 2.0 bearer token that the relay gets itself by the client credentials grant (OAUTHBEARER, the mechanism
 * of managed Kafka services). Read once at start through the variables' rows (vars/kafka.ts); one that belongs
 * to another mechanism is refused rather than silently ignored.
 */
import { ConfigError } from '../errors';
import type { VarReader } from './envVar';
import { KAFKA } from './vars/kafka';

/** The client credentials grant (RFC 6749 §4.4) whose access token is the relay's OAUTHBEARER token. */
export interface OAuthClientCredentials {
  /** KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: where the grant is POSTed. */
  tokenEndpointUrl: string;
  clientId: string;
  clientSecret: string;
  /** How the client authenticates to the token endpoint (RFC 7591 names): HTTP Basic, or in the form. */
  clientAuth: 'client_secret_basic' | 'client_secret_post';
  /** Space-separated scopes asked for; unset: the endpoint's default for the client. */
  scope?: string;
  /** The `audience` form parameter some providers want (Auth0, Okta custom servers); unset: not sent. */
  audience?: string;
}

export type KafkaSasl =
  | { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string }
  | { mechanism: 'oauthbearer'; oauth: OAuthClientCredentials };

const {
  KAFKA_SASL_MECHANISM,
  KAFKA_SASL_USERNAME,
  KAFKA_SASL_PASSWORD,
  KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: ENDPOINT,
  KAFKA_SASL_OAUTHBEARER_CLIENT_ID: CLIENT_ID,
  KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: CLIENT_SECRET,
  KAFKA_SASL_OAUTHBEARER_CLIENT_AUTH: CLIENT_AUTH,
  KAFKA_SASL_OAUTHBEARER_SCOPE: SCOPE,
  KAFKA_SASL_OAUTHBEARER_AUDIENCE: AUDIENCE,
} = KAFKA;

/** The variable that names the token endpoint, for the errors of the token provider (kafka/oauthBearer.ts). */
export const TOKEN_ENDPOINT_VARIABLE = ENDPOINT.name;

/** The OAuth variables that have no default: set while the mechanism is another, they are refused. */
const OAUTH_ONLY = [ENDPOINT, CLIENT_ID, CLIENT_SECRET, SCOPE, AUDIENCE] as const;

function required<T>(value: T | undefined, name: string, mechanism: string): T {
  if (value === undefined)
    throw new ConfigError(name, `is required when ${KAFKA_SASL_MECHANISM.name}=${mechanism}`);
  return value;
}

/** A user name or password set with oauthbearer would be read by nothing: refused, both named when both are set. */
function refuseUserAndPassword(v: VarReader): void {
  const [first, ...more] = [KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD]
    .filter((row) => v(row) !== undefined)
    .map((row) => row.name);
  if (!first) return;
  const set = more.length > 0 ? `and ${more.join(' and ')} are set` : 'is set';
  throw new ConfigError(
    first,
    `${set} but ${KAFKA_SASL_MECHANISM.name} is oauthbearer, which uses ${CLIENT_ID.name} and ${CLIENT_SECRET.name}`,
  );
}

/** The SASL settings of KAFKA_SASL_*, or undefined without a mechanism. */
export function readKafkaSasl(v: VarReader): KafkaSasl | undefined {
  const mechanism = v(KAFKA_SASL_MECHANISM);
  // Read (and checked) whatever the mechanism: it has a default, so setting it alone changes nothing.
  const clientAuth = v(CLIENT_AUTH);
  if (mechanism !== 'oauthbearer') {
    // Setting the one with a default (CLIENT_AUTH) to its default changes nothing, so only these are refused.
    const stray = OAUTH_ONLY.find((row) => v(row) !== undefined);
    if (stray)
      throw new ConfigError(stray.name, `is set but ${KAFKA_SASL_MECHANISM.name} is not oauthbearer`);
  }
  if (!mechanism) return undefined;
  if (mechanism === 'oauthbearer') {
    refuseUserAndPassword(v);
    const scope = v(SCOPE);
    const audience = v(AUDIENCE);
    return {
      mechanism,
      oauth: {
        tokenEndpointUrl: required(v(ENDPOINT), ENDPOINT.name, mechanism),
        clientId: required(v(CLIENT_ID), CLIENT_ID.name, mechanism),
        clientSecret: required(v(CLIENT_SECRET), CLIENT_SECRET.name, mechanism),
        clientAuth,
        ...(scope ? { scope } : {}),
        ...(audience ? { audience } : {}),
      },
    };
  }
  const username = v(KAFKA_SASL_USERNAME);
  const password = v(KAFKA_SASL_PASSWORD);
  const needed = `is required when ${KAFKA_SASL_MECHANISM.name} is set`;
  if (!username) throw new ConfigError(KAFKA_SASL_USERNAME.name, needed);
  if (!password) throw new ConfigError(KAFKA_SASL_PASSWORD.name, needed);
  return { mechanism, username, password };
}
