/**
 * classifyTemporalError (src/temporal/errors.ts): a failed Temporal call of a one-shot command becomes one line of
 * the CLI's classes, decided by the gRPC status found along the error's cause chain; anything else is left as it
 * is. The real server's answers: test/it_cli_errors.test.ts.
 */
import { AccessRefusedError, NotFoundError, UnreachableError } from '../../src/errors';
import { GRPC } from '../../src/temporal/grpcStatus';
import { classifyTemporalError } from '../../src/temporal/errors';

const cfg = { address: '127.0.0.1:7999', namespace: 'relay-ns' };

/** A ServiceError-like failure as the SDK nests it: the gRPC status is on the cause. */
function failed(code: number, details: string): Error {
  return new Error('Failed to call', { cause: Object.assign(new Error(details), { code, details }) });
}

describe('classifyTemporalError', () => {
  test('UNAVAILABLE and DEADLINE_EXCEEDED: unreachable, naming the address', () => {
    const down = classifyTemporalError(failed(GRPC.UNAVAILABLE, 'connection refused\nmore'), cfg);
    expect(down).toBeInstanceOf(UnreachableError);
    expect((down as Error).message).toBe(
      'Temporal at 127.0.0.1:7999 is unreachable (UNAVAILABLE: connection refused)',
    );
    const slow = classifyTemporalError(failed(GRPC.DEADLINE_EXCEEDED, 'waiting for metadata filters'), cfg);
    expect(slow).toBeInstanceOf(UnreachableError);
    expect((slow as Error).message).toBe(
      'Temporal at 127.0.0.1:7999 is unreachable (no answer in time: DEADLINE_EXCEEDED)',
    );
  });

  test.each([GRPC.UNAUTHENTICATED, GRPC.PERMISSION_DENIED])(
    'code %i: refused, naming the credentials',
    (code) => {
      const err = classifyTemporalError(failed(code, 'bad key'), cfg);
      expect(err).toBeInstanceOf(AccessRefusedError);
      expect((err as Error).message).toMatch(
        /^Temporal at 127\.0\.0\.1:7999 refused this client \(\w+: bad key\)/,
      );
      expect((err as Error).message).toContain('TEMPORAL_API_KEY');
    },
  );

  test('NOT_FOUND: the namespace does not exist', () => {
    const err = classifyTemporalError(failed(GRPC.NOT_FOUND, 'Namespace relay-ns is not found.'), cfg);
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as Error).message).toBe(
      'namespace relay-ns does not exist on Temporal at 127.0.0.1:7999 (Namespace relay-ns is not found.)',
    );
  });

  test('another code, no gRPC status, or an error already one line: left as it is', () => {
    const invalid = failed(GRPC.INVALID_ARGUMENT, 'bad request');
    expect(classifyTemporalError(invalid, cfg)).toBe(invalid);
    const bug = new TypeError('x is undefined');
    expect(classifyTemporalError(bug, cfg)).toBe(bug);
    const line = new UnreachableError('Temporal at 127.0.0.1:7999 is unreachable (no answer within 5 ms)');
    expect(classifyTemporalError(line, cfg)).toBe(line);
  });
});
