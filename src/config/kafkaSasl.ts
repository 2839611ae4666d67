/**
 * How the relay authenticates to Kafka by SASL (KAFKA_SASL_*): a user name and password (PLAIN, SCRAM), or an
 * OAuth 2.0 bearer token that the relay gets itself by the client credentials grant (OAUTHBEARER, the mechanism
 * of managed Kafka services). Read once at start; each variable is checked where it is read, and one that belongs
 * to another mechanism is refused rather than silently ignored.
 */
import { z } from 'zod';
import { ConfigError } from '../errors';
import { type Env, httpUrl, nonEmpty, read } from './schema';

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

export const OAUTH_VARIABLES = {
  tokenEndpointUrl: 'KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL',
  clientId: 'KAFKA_SASL_OAUTHBEARER_CLIENT_ID',
  clientSecret: 'KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET',
  clientAuth: 'KAFKA_SASL_OAUTHBEARER_CLIENT_AUTH',
  scope: 'KAFKA_SASL_OAUTHBEARER_SCOPE',
  audience: 'KAFKA_SASL_OAUTHBEARER_AUDIENCE',
} as const;

/** Scopes are space-separated printable ASCII without `"` or `\` (RFC 6749 §3.3). */
const scopeList = z
  .string()
  .regex(
    /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/,
    'must be scopes separated by single spaces',
  );

function required<T>(value: T | undefined, name: string, mechanism: string): T {
  if (value === undefined) throw new ConfigError(name, `is required when KAFKA_SASL_MECHANISM=${mechanism}`);
  return value;
}

function readOAuth(env: Env): Partial<OAuthClientCredentials> & { set: string[] } {
  const v = OAUTH_VARIABLES;
  const values = {
    tokenEndpointUrl: read(env, v.tokenEndpointUrl, httpUrl),
    clientId: read(env, v.clientId, nonEmpty),
    clientSecret: read(env, v.clientSecret, nonEmpty),
    clientAuth: read(
      env,
      v.clientAuth,
      z.enum(['client_secret_basic', 'client_secret_post'], {
        message: 'must be client_secret_basic or client_secret_post',
      }),
    ),
    scope: read(env, v.scope, scopeList),
    audience: read(env, v.audience, nonEmpty),
  };
  // Set while the mechanism is another: refused, but for the one with a default (setting a default changes nothing).
  const set = (Object.keys(values) as (keyof typeof values)[])
    .filter((k) => k !== 'clientAuth' && values[k] !== undefined)
    .map((k) => v[k]);
  return { ...values, set };
}

/** The SASL settings of KAFKA_SASL_*, or undefined without a mechanism. */
export function readKafkaSasl(env: Env): KafkaSasl | undefined {
  const mechanism = read(
    env,
    'KAFKA_SASL_MECHANISM',
    z.enum(['plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer'], {
      message: 'must be plain, scram-sha-256, scram-sha-512 or oauthbearer',
    }),
  );
  const oauth = readOAuth(env);
  if (mechanism !== 'oauthbearer' && oauth.set.length > 0)
    throw new ConfigError(oauth.set[0]!, 'is set but KAFKA_SASL_MECHANISM is not oauthbearer');
  if (!mechanism) return undefined;
  if (mechanism === 'oauthbearer') {
    const v = OAUTH_VARIABLES;
    return {
      mechanism,
      oauth: {
        tokenEndpointUrl: required(oauth.tokenEndpointUrl, v.tokenEndpointUrl, mechanism),
        clientId: required(oauth.clientId, v.clientId, mechanism),
        clientSecret: required(oauth.clientSecret, v.clientSecret, mechanism),
        clientAuth: oauth.clientAuth ?? 'client_secret_basic',
        ...(oauth.scope ? { scope: oauth.scope } : {}),
        ...(oauth.audience ? { audience: oauth.audience } : {}),
      },
    };
  }
  const username = read(env, 'KAFKA_SASL_USERNAME', nonEmpty);
  const password = read(env, 'KAFKA_SASL_PASSWORD', nonEmpty);
  if (!username) throw new ConfigError('KAFKA_SASL_USERNAME', 'is required when KAFKA_SASL_MECHANISM is set');
  if (!password) throw new ConfigError('KAFKA_SASL_PASSWORD', 'is required when KAFKA_SASL_MECHANISM is set');
  return { mechanism, username, password };
}
