/**
 * Which failed workflow starts are this record's own fault. Decided by the gRPC status code the server answered
 * (never by message text): INVALID_ARGUMENT refuses this request whatever the server's state (an input over the
 * blob size limit, a value Temporal cannot index) and would be refused again on every retry, stalling the
 * partition behind it, so the record is dead-lettered with the server's reason. Every other code (UNAVAILABLE,
 * DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, and the credential and namespace errors operators fix) is an outage the
 * ingester waits out.
 */
import { GRPC, grpcStatus } from './grpcStatus';

export interface StartRefusal {
  code: string;
  details: string;
}

export function startRefusal(err: unknown): StartRefusal | undefined {
  const status = grpcStatus(err);
  return status?.code === GRPC.INVALID_ARGUMENT
    ? { code: 'INVALID_ARGUMENT', details: status.details }
    : undefined;
}
