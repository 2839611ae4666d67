/**
 * The gRPC status of a failed Temporal call, the one place that reads it: the SDK wraps the call's ServiceError
 * (a numeric `code` with the server's text in `details`) in its own errors. Callers decide by the code, never by
 * message text.
 */
import { errorChain } from '../errors';

/** gRPC status codes (fixed by the gRPC spec) that the relay tells apart. */
export const GRPC = {
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

export const GRPC_NAME: Record<number, string> = Object.fromEntries(
  Object.entries(GRPC).map(([k, v]) => [v, k]),
);

/** The first gRPC status in the error's chain; undefined when none is there (not a server's answer). */
export function grpcStatus(err: unknown): { code: number; details: string } | undefined {
  for (const e of errorChain(err)) {
    const { code, details } = e as { code?: unknown; details?: unknown };
    if (typeof code === 'number' && typeof details === 'string') return { code, details };
  }
  return undefined;
}
