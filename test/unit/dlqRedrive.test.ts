/**
 * Which dead letters `dlq redrive` takes (src/ops/dlqVerdict.ts) and what it re-publishes: dispatch failures that
 * ran out of retries, once old enough, while their dispatch has redrives left, with the count raised by one in
 * the `poimen-redrive-count` header; everything else stays pending. Pure: no broker.
 */
import {
  type DlqRecord,
  REDRIVE_COUNT_HEADER,
  REDRIVE_COUNT_MEMO,
  buildDlqRecord,
  recordRedriveCount,
  redriveCountOf,
} from '../../src/contract';
import { dispatchStartOptions } from '../../src/ingest/startDispatch';
import { decide, republishedMessage } from '../../src/ops/dlqVerdict';

const NOW = Date.parse('2026-12-04T10:00:00Z');
const HOUR = 3_600_000;
const policy = { afterMs: HOUR, max: 3, nowMs: NOW };

function failure(
  opts: { status?: number | null; ageMs?: number; count?: string; type?: DlqRecord['type'] } = {},
) {
  return buildDlqRecord({
    id: 'id-1',
    timestamp: NOW - (opts.ageMs ?? 2 * HOUR),
    type: opts.type ?? 'dispatch_failure',
    tenant: 'acme',
    dispatchKey: 'd-1',
    error: 'RETRY_MAX_ATTEMPTS (2) spent; last: runs API answered 503',
    httpStatus: opts.status === undefined ? 503 : opts.status,
    source: { topic: 'poimen.acme.dispatch', partition: 0, offset: '7', timestamp: String(NOW - 3 * HOUR) },
    key: 'acme:d-1',
    headers: {
      'x-origin': Buffer.from('billing'),
      ...(opts.count === undefined ? {} : { [REDRIVE_COUNT_HEADER]: Buffer.from(opts.count) }),
    },
    value: '{"dispatch_key":"d-1"}',
  });
}

test('a dispatch failure that ran out of retries, old enough, with redrives left, is taken', () => {
  const r = failure();
  expect(decide(r, false, { redrive: policy })).toEqual({ record: r });
  // No answer at all (a timeout, a transport error, the breaker) is worth another try too.
  expect(decide(failure({ status: null }), false, { redrive: policy })).toEqual({
    record: failure({ status: null }),
  });
  for (const status of [408, 425, 429, 401, 403, 500, 599])
    expect(decide(failure({ status }), false, { redrive: policy })).toHaveProperty('record');
});

test('refused for good, other types and test dead letters are not redrivable; they stay pending', () => {
  for (const status of [400, 404, 409, 422, 302])
    expect(decide(failure({ status }), false, { redrive: policy })).toBe('not_replayable');
  expect(decide(failure({ type: 'malformed_dispatch' }), false, { redrive: policy })).toBe('not_replayable');
  expect(decide(failure(), true, { redrive: policy })).toBe('test');
  expect(decide(undefined, false, { redrive: policy })).toBe('unreadable');
});

test('younger than --after is not due yet; exactly --after old is', () => {
  expect(decide(failure({ ageMs: HOUR - 1 }), false, { redrive: policy })).toBe('not_due');
  expect(decide(failure({ ageMs: HOUR }), false, { redrive: policy })).toHaveProperty('record');
});

test('a dispatch redriven --max times stays put; a count that is not a number reads as 0', () => {
  expect(decide(failure({ count: '2' }), false, { redrive: policy })).toHaveProperty('record');
  expect(decide(failure({ count: '3' }), false, { redrive: policy })).toBe('redrives_spent');
  expect(decide(failure({ count: '9' }), false, { redrive: { ...policy, max: 1 } })).toBe('redrives_spent');
  expect(redriveCountOf(failure({ count: 'x' }).source)).toBe(0);
  expect(redriveCountOf(failure().source)).toBe(0);
  expect(redriveCountOf({ headers: { [REDRIVE_COUNT_HEADER]: ['1', '2'] } })).toBe(2);
});

test('the re-published message is the source record, its redrive count raised by one', () => {
  const first = republishedMessage('acme', failure(), policy);
  expect(first.key?.toString()).toBe('acme:d-1');
  expect(first.value?.toString()).toBe('{"dispatch_key":"d-1"}');
  expect(Object.keys(first.headers)).toEqual(['x-origin', 'poimen-replay-of', REDRIVE_COUNT_HEADER]);
  expect(first.headers['x-origin']?.toString()).toBe('billing');
  expect(first.headers['poimen-replay-of']).toBe('id-1');
  expect(first.headers[REDRIVE_COUNT_HEADER]).toBe('1');
  expect(republishedMessage('acme', failure({ count: '2' }), policy).headers[REDRIVE_COUNT_HEADER]).toBe('3');
  // A plain replay re-publishes the header as the source record had it, and sets none.
  expect(republishedMessage('acme', failure(), undefined).headers).not.toHaveProperty(REDRIVE_COUNT_HEADER);
  expect(
    republishedMessage('acme', failure({ count: '2' }), undefined).headers[REDRIVE_COUNT_HEADER]?.toString(),
  ).toBe('2');
});

describe('the count travels from the redriven record into its start memo', () => {
  test("a consumed record's count: its last header, as bytes or text; anything else is 0", () => {
    expect(recordRedriveCount({ [REDRIVE_COUNT_HEADER]: Buffer.from('2') })).toBe(2);
    expect(recordRedriveCount({ [REDRIVE_COUNT_HEADER]: [Buffer.from('1'), '3'] })).toBe(3);
    expect(recordRedriveCount({ [REDRIVE_COUNT_HEADER]: Buffer.from('-1') })).toBe(0);
    expect(recordRedriveCount({ [REDRIVE_COUNT_HEADER]: Buffer.from([0xff]) })).toBe(0);
    expect(recordRedriveCount({ other: '4' })).toBe(0);
    expect(recordRedriveCount(undefined)).toBe(0);
  });

  test('the start memo carries a count above 0, and nothing otherwise', () => {
    const input = {
      tenant: 'acme',
      dispatch: { workflow_ref: 'w@1', input: {}, goal_id: null, dispatch_key: 'd-1' },
      source: { topic: 'poimen.acme.dispatch', partition: 0, offset: '7', timestamp: String(NOW) },
      policy: { retry: { maxAttempts: 0 } },
    } as unknown as Parameters<typeof dispatchStartOptions>[1];
    expect(dispatchStartOptions('q', input, { redriveCount: 2 }).memo[REDRIVE_COUNT_MEMO]).toBe(2);
    expect(REDRIVE_COUNT_MEMO in dispatchStartOptions('q', input, { redriveCount: 0 }).memo).toBe(false);
    expect(REDRIVE_COUNT_MEMO in dispatchStartOptions('q', input).memo).toBe(false);
  });
});
