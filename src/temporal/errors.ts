/**
 * What a failed Temporal call means to a one-shot command, the twin of src/kafka/errors.ts's classifyKafkaError:
 * the call's failure turned into the CLI's classes (src/errors.ts: unreachable, refused, not found), each one line
 * naming the service and its address. Decided by gRPC status code (./grpcStatus), never by message text;
 * anything else is left as it is (a bug, printed with its stack). A start's refusals are ./startRefusal's.
 */
import type { TemporalConfig } from '../config';
import { TEMPORAL } from '../config/vars/temporal';
import { AccessRefusedError, NotFoundError, UnreachableError, isUserFacingError } from '../errors';
import { GRPC, GRPC_NAME, grpcStatus } from './grpcStatus';

export function classifyTemporalError(
  err: unknown,
  { address, namespace }: Pick<TemporalConfig, 'address' | 'namespace'>,
): unknown {
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
        `${where} refused this client (${name}: ${details}); check ${TEMPORAL.TEMPORAL_API_KEY.name}, ${TEMPORAL.TEMPORAL_TLS_CERT.name}/${TEMPORAL.TEMPORAL_TLS_KEY.name}`,
      );
    case GRPC.NOT_FOUND:
      return new NotFoundError(`namespace ${namespace} does not exist on ${where} (${details})`);
    default:
      return err;
  }
}
