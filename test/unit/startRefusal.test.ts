import { ServiceError } from '@temporalio/client';
import { startRefusal } from '../../src/temporal/startRefusal';

/** What @grpc/grpc-js rejects a call with: a numeric status code, the server's text in `details`, metadata. */
function grpcError(code: number, details: string): Error {
  return Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
}

describe('which failed starts are the record’s own fault (by gRPC status code)', () => {
  test('INVALID_ARGUMENT, as the client wraps it, is a refusal carrying the server’s reason', () => {
    const err = new ServiceError('Failed to start Workflow', {
      cause: grpcError(3, 'Blob data size exceeds limit.'),
    });
    expect(startRefusal(err)).toEqual({ code: 'INVALID_ARGUMENT', details: 'Blob data size exceeds limit.' });
  });

  test.each([
    ['UNAVAILABLE', 14],
    ['DEADLINE_EXCEEDED', 4],
    ['RESOURCE_EXHAUSTED', 8],
    ['PERMISSION_DENIED', 7],
    ['UNAUTHENTICATED', 16],
    ['NOT_FOUND (namespace)', 5],
    ['FAILED_PRECONDITION', 9],
    ['INTERNAL', 13],
  ])('%s is an outage to wait out, not a refusal', (_name, code) => {
    expect(startRefusal(new ServiceError('Failed to start Workflow', { cause: grpcError(code, 'x') }))).toBe(
      undefined,
    );
  });

  test('an error without a gRPC status (a socket error, a bug) is not a refusal', () => {
    expect(startRefusal(new Error('connect ECONNREFUSED'))).toBeUndefined();
    expect(startRefusal(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBeUndefined();
    expect(startRefusal(undefined)).toBeUndefined();
  });

  test('the text of a message never decides: INVALID_ARGUMENT words under another code are an outage', () => {
    expect(startRefusal(grpcError(14, 'INVALID_ARGUMENT: blob too large'))).toBeUndefined();
  });
});
