/**
 * What kafkajs's errors mean, the one place that knows their classes, types and codes: credentials or
 * certificates refused (kafkaAccessProblem, for the ingester's start and the CLI), and a one-shot command's
 * failure turned into the CLI's classes (src/errors.ts: unreachable, refused) as one line naming the brokers.
 * Decided by error class, type and socket code, never by message text; anything else is left as it is.
 * Temporal's twin is src/temporal/errors.ts (classifyTemporalError).
 */
import type { KafkaConfig } from '../config';
import { KAFKA } from '../config/vars/kafka';
import { AccessRefusedError, UnreachableError, errorChain, isUserFacingError } from '../errors';
import { handshakeFailure, tlsRefusal } from '../tlsErrors';
import { OAuthTokenError } from './oauthBearer';

/** Who this client is to Kafka, for a line saying it was refused. */
function principal(cfg: KafkaConfig): string {
  if (!cfg.sasl) return 'this client';
  if (cfg.sasl.mechanism === 'oauthbearer') return `OAuth client ${JSON.stringify(cfg.sasl.oauth.clientId)}`;
  return `user ${JSON.stringify(cfg.sasl.username)}`;
}

/** The variables to fix when Kafka refused this client's SASL login. */
function saslRefusal(cfg: KafkaConfig): { variable: string; reason: string } {
  const where = `Kafka at ${cfg.brokers.join(',')}`;
  // kafkajs's OAUTHBEARER takes a broker's rejection of the token itself for success (the connection fails on the
  // next request instead), so what comes here is the login refused before that: the mechanism not enabled.
  if (cfg.sasl?.mechanism === 'oauthbearer')
    return {
      variable: KAFKA.KAFKA_SASL_MECHANISM.name,
      reason: `= oauthbearer was refused by ${where} (${principal(cfg)}: authentication failed)`,
    };
  const who = cfg.sasl ? `${cfg.sasl.mechanism} ${principal(cfg)}` : 'SASL';
  return {
    variable: `${KAFKA.KAFKA_SASL_USERNAME.name}/${KAFKA.KAFKA_SASL_PASSWORD.name}`,
    reason: `were rejected by ${where} (${who}: authentication failed)`,
  };
}

/**
 * When Kafka refused this client's credentials or the client refused the brokers' certificate, the one-line
 * reason naming the variables to fix; undefined for anything that waiting may cure (broker down, network).
 * Decided by error class and code (kafkajs keeps the socket's `code` on its connection errors), never by
 * message text. No secret goes into the reason.
 */
export function kafkaAccessProblem(
  err: unknown,
  cfg: KafkaConfig,
): { variable: string; reason: string } | undefined {
  const seen = new Set<unknown>();
  for (let e: unknown = err; e && typeof e === 'object' && !seen.has(e);) {
    seen.add(e);
    const { name, code, type } = e as { name?: unknown; code?: unknown; type?: unknown };
    // The token endpoint said no to the relay's client credentials: no broker was asked.
    if (e instanceof OAuthTokenError && e.refused) return { variable: e.variable, reason: e.reason };
    if (name === 'KafkaJSSASLAuthenticationError' || type === 'SASL_AUTHENTICATION_FAILED')
      return saslRefusal(cfg);
    const refusal = name === 'KafkaJSConnectionError' && cfg.ssl ? tlsRefusal(code) : undefined;
    if (refusal !== undefined) {
      const where = `Kafka at ${cfg.brokers.join(',')}`;
      const detail = String(code);
      if (refusal === 'untrusted-server') {
        return cfg.sslCaPath
          ? {
              variable: KAFKA.KAFKA_SSL_CA.name,
              reason: `does not fit ${where}: TLS handshake failed (${detail})`,
            }
          : {
              variable: KAFKA.KAFKA_SSL.name,
              reason: `= true but the TLS handshake with ${where} failed (${detail})`,
            };
      }
      // The CA is not in question here: the brokers refused our client certificate (or its absence), or the two
      // ends share no TLS version or cipher, or the port does not speak TLS. TLS is on because KAFKA_SSL is true
      // or KAFKA_SSL_CA or a client certificate implies it.
      if (refusal === 'refused-by-server') {
        return {
          variable: `${KAFKA.KAFKA_SSL_CERT.name}/${KAFKA.KAFKA_SSL_KEY.name}`,
          reason: cfg.sslCertPath
            ? `were refused by ${where} (${detail})`
            : `are unset but ${where} requires a client certificate (${detail})`,
        };
      }
      return { variable: KAFKA.KAFKA_SSL.name, reason: `is on but with ${where}: ${handshakeFailure(code)}` };
    }
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** kafkajs errors that mean "no answer": the broker is down, the network is, or the broker is too slow. */
const KAFKA_NO_ANSWER = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSNumberOfRetriesExceeded',
  'KafkaJSBrokerNotFound',
  'KafkaJSGroupCoordinatorNotFound',
]);

const KAFKA_NOT_AUTHORIZED = new Set([
  'TOPIC_AUTHORIZATION_FAILED',
  'GROUP_AUTHORIZATION_FAILED',
  'CLUSTER_AUTHORIZATION_FAILED',
  'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
]);

export function kafkaWhere(cfg: KafkaConfig): string {
  return `Kafka at ${cfg.brokers.join(',')}`;
}

/** The innermost message of a chain, for the parenthesis after "unreachable". */
function innermost(err: unknown): string {
  const c = errorChain(err);
  const last = c[c.length - 1];
  const code = last?.['code'];
  const message = typeof last?.['message'] === 'string' ? (last['message'] as string) : String(err);
  return (typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message)
    .replace(/^Connection error: /, '')
    .split('\n')[0]!;
}

/** Kafka's refusal of an ACL anywhere in the error's chain (TOPIC_AUTHORIZATION_FAILED, …): its type, or undefined. */
export function kafkaNotAuthorized(err: unknown): string | undefined {
  const denied = errorChain(err).find((e) => KAFKA_NOT_AUTHORIZED.has(String(e['type'])));
  return denied ? String(denied['type']) : undefined;
}

export function classifyKafkaError(err: unknown, cfg: KafkaConfig): unknown {
  if (isUserFacingError(err)) return err;
  const access = kafkaAccessProblem(err, cfg);
  if (access) return new AccessRefusedError(`${access.variable} ${access.reason}`);
  const links = errorChain(err);
  const denied = kafkaNotAuthorized(err);
  if (denied)
    return new AccessRefusedError(`${kafkaWhere(cfg)} refused ${principal(cfg)}: ${denied} (check its ACLs)`);
  // The token endpoint did not answer (or failed): the brokers were never asked.
  const tokenFailure = links.find((e) => e instanceof OAuthTokenError);
  if (tokenFailure) return new UnreachableError((tokenFailure as unknown as OAuthTokenError).message);
  // kafkajs drops a refused FindCoordinator (GROUP_AUTHORIZATION_FAILED) and reports only that no broker named a
  // coordinator: the same as brokers still electing one, so both causes are named.
  if (links.some((e) => e['name'] === 'KafkaJSGroupCoordinatorNotFound'))
    return new UnreachableError(
      `${kafkaWhere(cfg)} named no coordinator for the consumer group: unreachable or still starting, or ${principal(cfg)} may not Describe/Read the group (check its ACLs)`,
    );
  if (links.some((e) => KAFKA_NO_ANSWER.has(String(e['name']))))
    return new UnreachableError(`${kafkaWhere(cfg)} is unreachable (${innermost(err)})`);
  return err;
}

/**
 * Group-coordinator answers that mean this member's generation is over: the coordinator moved to another broker
 * (NOT_COORDINATOR), or the group has already moved on without this member. A commit answered
 * REBALANCE_IN_PROGRESS is one too: the coordinator gives that answer to a commit only once the group's join
 * phase has completed (CompletingRebalance), when no commit of this generation is taken any more. kafkajs's own
 * answer to each is to rejoin the group, which its consumer does only when the error reaches it from a fetch,
 * a heartbeat or a batch handler; a handler that swallowed it would go on with a generation nobody honours.
 */
const GROUP_GENERATION_OVER = new Set([
  'NOT_COORDINATOR_FOR_GROUP',
  'REBALANCE_IN_PROGRESS',
  'ILLEGAL_GENERATION',
  'UNKNOWN_MEMBER_ID',
]);

/**
 * The link of the error's chain that says the member's group generation is over (kafkajs wraps a commit's
 * last answer in KafkaJSNumberOfRetriesExceeded), as the error to hand back to kafkajs so that it rejoins;
 * undefined for anything else.
 */
export function groupGenerationOver(err: unknown): Error | undefined {
  const link = errorChain(err).find((e) => GROUP_GENERATION_OVER.has(String(e['type'])));
  return link instanceof Error ? link : undefined;
}

/**
 * A heartbeat answered REBALANCE_IN_PROGRESS: the group is preparing a rebalance and waits for its members to
 * rejoin. The generation still stands until then: the coordinator takes this member's commits of it (and they
 * keep its session), so what the member finished is committed before it rejoins. Only for a heartbeat's answer:
 * a commit's is groupGenerationOver's. The error to hand back to kafkajs, or undefined.
 */
export function groupRebalancing(heartbeatErr: unknown): Error | undefined {
  const link = errorChain(heartbeatErr).find((e) => e['type'] === 'REBALANCE_IN_PROGRESS');
  return link instanceof Error ? link : undefined;
}

/**
 * Group-coordinator answers that mean "not yet": the coordinator is loading the group's offsets, or not chosen yet
 * (a broker no group has used creates its offsets topic at the first group's join; a coordinator that moved loads
 * its share), or could not be found in kafkajs's retries meanwhile. kafkajs's consumer crashes on one at its join
 * and restarts itself; a bounded read lets it (./readRange.ts) for a while instead of failing at once.
 */
const COORDINATOR_NOT_READY = new Set([
  'GROUP_LOAD_IN_PROGRESS',
  'GROUP_COORDINATOR_NOT_AVAILABLE',
  'NOT_COORDINATOR_FOR_GROUP',
]);

export function groupCoordinatorNotReady(err: unknown): boolean {
  return errorChain(err).some(
    (e) => COORDINATOR_NOT_READY.has(String(e['type'])) || e['name'] === 'KafkaJSGroupCoordinatorNotFound',
  );
}

/** Whether Kafka answered that a topic asked about does not exist. */
export function topicUnknown(err: unknown): boolean {
  return errorChain(err).some((e) => e['type'] === 'UNKNOWN_TOPIC_OR_PARTITION');
}

/**
 * Whether a client may have failed for a topic it knew rather than the one asked about: one deleted, or one this
 * principal may no longer see (a tenant offboarded by taking its ACLs away), fails every metadata refresh alike.
 */
export function topicLost(err: unknown): boolean {
  return topicUnknown(err) || errorChain(err).some((e) => e['type'] === 'TOPIC_AUTHORIZATION_FAILED');
}
