/**
 * Failures of Kafka and Temporal calls, turned into the CLI's classes (src/errors.ts): unreachable, refused,
 * not found — each one line naming the service and its address. Decided by error class, kafkajs error type
 * and gRPC status code, never by message text; anything else is left as it is (a bug, printed with its stack).
 */
import { isGrpcServiceError } from '@temporalio/client';
import type { KafkaConfig } from '../config';
import { AccessRefusedError, NotFoundError, UnreachableError, isUserFacingError } from '../errors';
import { kafkaAccessProblem } from '../kafka/client';

/** The error and its causes (kafkajs nests them in `cause` or `originalError`, the Temporal SDK in `cause`). */
function chain(err: unknown): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let e: unknown = err; e && typeof e === 'object' && !out.includes(e as Record<string, unknown>);) {
    const o = e as Record<string, unknown>;
    out.push(o);
    e = o['cause'] ?? o['originalError'];
  }
  return out;
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
  const c = chain(err);
  const last = c[c.length - 1];
  const code = last?.['code'];
  const message = typeof last?.['message'] === 'string' ? (last['message'] as string) : String(err);
  return (typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message)
    .replace(/^Connection error: /, '')
    .split('\n')[0]!;
}

export function classifyKafkaError(err: unknown, cfg: KafkaConfig): unknown {
  if (isUserFacingError(err)) return err;
  const access = kafkaAccessProblem(err, cfg);
  if (access) return new AccessRefusedError(`${access.variable} ${access.reason}`);
  const links = chain(err);
  const denied = links.find((e) => KAFKA_NOT_AUTHORIZED.has(String(e['type'])));
  if (denied) {
    const who = cfg.sasl ? `user ${JSON.stringify(cfg.sasl.username)}` : 'this client';
    return new AccessRefusedError(
      `${kafkaWhere(cfg)} refused ${who}: ${String(denied['type'])} (check its ACLs)`,
    );
  }
  if (links.some((e) => KAFKA_NO_ANSWER.has(String(e['name']))))
    return new UnreachableError(`${kafkaWhere(cfg)} is unreachable (${innermost(err)})`);
  return err;
}

/** gRPC status codes (fixed by the gRPC spec), the ones the CLI tells apart. */
const GRPC = {
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  PERMISSION_DENIED: 7,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;
const GRPC_NAME = Object.fromEntries(Object.entries(GRPC).map(([k, v]) => [v, k]));

/** The gRPC status somewhere in the chain (the SDK wraps the call's ServiceError). */
function grpcStatus(err: unknown): { code: number; details: string } | undefined {
  const e = chain(err).find((x) => isGrpcServiceError(x));
  return e && isGrpcServiceError(e) ? { code: e.code, details: e.details } : undefined;
}

export function classifyTemporalError(err: unknown, address: string, namespace: string): unknown {
  if (isUserFacingError(err)) return err;
  const where = `Temporal at ${address}`;
  const g = grpcStatus(err);
  if (!g) return err;
  const details = g.details.split('\n')[0];
  const name = GRPC_NAME[g.code];
  switch (g.code) {
    case GRPC.UNAVAILABLE:
      return new UnreachableError(`${where} is unreachable (${name}: ${details})`);
    case GRPC.DEADLINE_EXCEEDED:
      // Its details describe gRPC internals ("waiting for metadata filters"), not the server.
      return new UnreachableError(`${where} is unreachable (no answer in time: ${name})`);
    case GRPC.UNAUTHENTICATED:
    case GRPC.PERMISSION_DENIED:
      return new AccessRefusedError(
        `${where} refused this client (${name}: ${details}); check TEMPORAL_API_KEY, TEMPORAL_TLS_CERT/TEMPORAL_TLS_KEY`,
      );
    case GRPC.NOT_FOUND:
      return new NotFoundError(`namespace ${namespace} does not exist on ${where} (${details})`);
    default:
      return err;
  }
}
