import { ServiceError } from '@temporalio/client';
import { namespaceRefusal, startRefusal } from '../../src/temporal/startRefusal';

/** What @grpc/grpc-js rejects a call with: a numeric status code, the server's text in `details`, metadata. */
function grpcError(code: number, details: string): Error {
  return Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
}

describe('which failed starts are the record’s own fault', () => {
  test('INVALID_ARGUMENT, as the client wraps it, is a refusal carrying the server’s reason', () => {
    const err = new ServiceError('Failed to start Workflow', {
      cause: grpcError(3, 'Blob data size exceeds limit.'),
    });
    expect(startRefusal(err)).toEqual({ code: 'INVALID_ARGUMENT', details: 'Blob data size exceeds limit.' });
  });

  // The server's per-record answers, worded as go.temporal.io/server words them (the first two are pinned against a
  // real server by test/it_temporal_refusal.test.ts).
  test.each([
    'Blob data size exceeds limit.',
    'search attribute WorkflowRef value size 602 exceeds size limit 256',
    'Memo size exceeds limit.',
    'total size of search attributes 50000 exceeds size limit 40960',
    'invalid value for search attribute GoalId of type Keyword: x',
    'WorkflowId length exceeds limit.',
    'WorkflowId exceeds length limit.',
  ])('INVALID_ARGUMENT “%s” is this record’s own refusal', (details) => {
    const err = new ServiceError('Failed to start Workflow', { cause: grpcError(3, details) });
    expect(startRefusal(err)).toEqual({ code: 'INVALID_ARGUMENT', details });
    expect(namespaceRefusal(err)).toBeUndefined();
  });

  // The namespace's answers: every valid record would get them, so none may dead-letter a record.
  test.each([
    'Namespace default has no mapping defined for search attribute DispatchKey',
    'search attribute TenantId is not defined',
    'invalid value for search attribute GoalId of type Int: g-17',
    'number of search attributes 4 exceeds limit 3',
    'unable to get TenantId search attribute type: boom',
    'a refusal this relay does not know yet',
  ])('INVALID_ARGUMENT “%s” is the namespace’s: an outage carrying the reason', (details) => {
    const err = new ServiceError('Failed to start Workflow', { cause: grpcError(3, details) });
    expect(startRefusal(err)).toBeUndefined();
    expect(namespaceRefusal(err)).toBe(details);
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
    const err = new ServiceError('Failed to start Workflow', {
      cause: grpcError(code, 'Blob data size exceeds limit.'),
    });
    expect(startRefusal(err)).toBeUndefined();
    expect(namespaceRefusal(err)).toBeUndefined();
  });

  test('an error without a gRPC status (a socket error, a bug) is not a refusal', () => {
    expect(startRefusal(new Error('connect ECONNREFUSED'))).toBeUndefined();
    expect(startRefusal(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBeUndefined();
    expect(startRefusal(undefined)).toBeUndefined();
  });

  test('a per-record text under another code is an outage: the code decides first', () => {
    expect(startRefusal(grpcError(14, 'INVALID_ARGUMENT: blob too large'))).toBeUndefined();
    expect(startRefusal(grpcError(14, 'Blob data size exceeds limit.'))).toBeUndefined();
  });
});
