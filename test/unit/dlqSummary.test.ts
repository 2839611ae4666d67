/**
 * `dlq summary`'s grouping without Kafka: the error class of each reason the relay writes, and the groups, their
 * counts, times, example ids and order (src/contract/dlqErrorClass.ts, src/ops/dlqSummary.ts).
 */
import { classifyRunsApiAnswer } from '../../src/activities/classify';
import { type DlqRecord, buildDlqRecord, dlqErrorClass, validateDispatch } from '../../src/contract';
import { summaryTable, vanishedLine } from '../../src/cli/dlqSummaryCommand';
import { DlqGrouper, workflowRefOf } from '../../src/ops/dlqSummary';

const reasonOf = (status: number, body: string, headers: Record<string, string> = {}) => {
  const c = classifyRunsApiAnswer({ kind: 'response', status, headers, body, nowMs: 0 });
  if (c.outcome === 'success') throw new Error('not a failure');
  return c.reason;
};
const transport = (code: string | undefined) => {
  const c = classifyRunsApiAnswer({ kind: 'error', code });
  if (c.outcome === 'success') throw new Error('not a failure');
  return c.reason;
};
const invalid = (value: string) => {
  const v = validateDispatch(Buffer.from(value), { tenant: 'acme', maxBytes: 1 << 20 });
  if (v.ok) throw new Error('valid');
  return v.reason;
};

describe('dlqErrorClass: the classifier reason without what varies per record', () => {
  test('a runs API answer: its status, whatever the body', () => {
    expect(dlqErrorClass(reasonOf(422, '{"error":"unknown workflow_ref x@v1","id":"r-1"}'))).toBe(
      'runs API answered 422',
    );
    expect(dlqErrorClass(reasonOf(422, 'other body 12345'))).toBe('runs API answered 422');
    expect(dlqErrorClass(reasonOf(302, '', { location: 'http://x/1' }))).toBe('runs API answered 302');
  });

  test('a transport failure: its code, without the words', () => {
    expect(dlqErrorClass(transport('ECONNREFUSED'))).toBe('runs API request failed: ECONNREFUSED');
    expect(dlqErrorClass(transport('SOMETHING_NEW'))).toBe('runs API request failed: SOMETHING_NEW');
    expect(dlqErrorClass(transport(undefined))).toBe('runs API request failed: no error code');
  });

  test("a dispatch failure's ending: the last reason is the class; notes about the payload are dropped", () => {
    const last = reasonOf(503, 'upstream unavailable');
    expect(dlqErrorClass(`RETRY_MAX_ATTEMPTS (10) spent; last: ${last}`)).toBe('runs API answered 503');
    expect(
      dlqErrorClass(
        `retry budget of 1 h spent (RETRY_MAX_DURATION_MS) after 12 attempt(s); last: ${transport('ETIMEDOUT')}`,
      ),
    ).toBe('runs API request failed: ETIMEDOUT');
    expect(
      dlqErrorClass(`${last} [payload omitted: the dead letter was 9000000 bytes, more than t accepts]`),
    ).toBe('runs API answered 503');
    expect(
      dlqErrorClass(
        'runs API unavailable (circuit breaker open since 2026-01-01T00:00:00.000Z); last: runs API answered 500',
      ),
    ).toBe('runs API answered 500');
    expect(
      dlqErrorClass('runs API unavailable (circuit breaker open since 2026-01-01T00:00:00.000Z); last: n/a'),
    ).toBe('n/a');
  });

  test('validation reasons: the rule, with values, numbers and quoted text taken out', () => {
    const a = dlqErrorClass(invalid('{"broken": '));
    expect(a).toBe(dlqErrorClass(invalid('{"other": [1,')));
    expect(a).toBe('value is not valid JSON');
    expect(dlqErrorClass(invalid('   '))).toBe(dlqErrorClass(invalid('      ')));
    expect(dlqErrorClass(invalid('   '))).toBe('value is only whitespace (N bytes)');
    const mismatch = (t: string) =>
      invalid(JSON.stringify({ workflow_ref: 'w', input: {}, dispatch_key: 'k', tenant_id: t }));
    expect(dlqErrorClass(mismatch('other'))).toBe(dlqErrorClass(mismatch('third')));
    expect(dlqErrorClass(mismatch('other'))).not.toContain('other');
    expect(
      dlqErrorClass('field x has a lone UTF-16 surrogate (\\uD800 at character 12), not valid Unicode'),
    ).toBe('field x has a lone UTF-16 surrogate (\\uXXXX at character N), not valid Unicode');
    expect(dlqErrorClass('run 3f0b6a8e-1111-4222-8333-444455556666 lost')).toBe('run <id> lost');
  });

  test("a producer's number is a value whatever its sign: negative numbers make no class of their own", () => {
    const tooBig = (n: string) => `field input has the number ${n}, which is not finite`;
    expect(dlqErrorClass(tooBig('-1e309'))).toBe(dlqErrorClass(tooBig('1e309')));
    expect(dlqErrorClass(tooBig('-2.5e400'))).toBe('field input has the number N, which is not finite');
    // A hyphenated word keeps its digits: they name something, they are not a value.
    expect(dlqErrorClass('header x-1 is refused')).toBe('header x-1 is refused');
  });

  test('bounded length; never empty', () => {
    expect(dlqErrorClass('x'.repeat(500)).length).toBeLessThanOrEqual(80);
    expect(dlqErrorClass('')).toBe('unknown');
  });
});

let seq = 0;
function record(over: Partial<DlqRecord> & { at: string; ref?: string | null }): DlqRecord {
  const { at, ref, ...rest } = over;
  const payload =
    ref === null
      ? null
      : JSON.stringify({ workflow_ref: ref ?? 'onboarding@v3', input: {}, dispatch_key: 'k' });
  return {
    ...buildDlqRecord({
      id: `id-${++seq}`,
      timestamp: Date.parse(at),
      type: 'dispatch_failure',
      tenant: 'acme',
      dispatchKey: 'k',
      error: 'runs API answered 422: nope',
      httpStatus: 422,
      source: { topic: 'poimen.acme.dispatch', partition: 0, offset: String(seq), timestamp: '0' },
      value: payload,
    }),
    ...rest,
  };
}

describe('DlqGrouper', () => {
  test('groups by tenant, type, error class, status and workflow_ref; counts, first, last, newest example', () => {
    const g = new DlqGrouper();
    const a1 = record({ at: '2026-01-01T00:00:02Z', error: 'runs API answered 422: a' });
    const a2 = record({
      at: '2026-01-01T00:00:01Z',
      error: 'RETRY_MAX_ATTEMPTS (3) spent; last: runs API answered 422: b',
    });
    const a3 = record({ at: '2026-01-01T00:00:03Z' });
    const otherRef = record({ at: '2026-01-01T00:00:04Z', ref: 'report@v1' });
    const otherStatus = record({
      at: '2026-01-01T00:00:05Z',
      http_status: 400,
      error: 'runs API answered 400: x',
    });
    const malformed = record({
      at: '2026-01-01T00:00:06Z',
      type: 'malformed_dispatch',
      http_status: null,
      error: 'value is not valid JSON: pos 3',
      payload: '{"broken',
    });
    for (const r of [a1, a2, a3, otherRef, otherStatus, malformed])
      g.add('acme', { record: r, test: false }, 0);
    g.add('beta', { record: a3, test: false }, 0);
    g.add('acme', { record: record({ at: '2026-01-01T00:00:07Z', payload: null }), test: true }, 0);
    g.add('acme', { record: undefined, test: false }, Date.parse('2026-01-01T00:00:08Z'));
    const groups = g.result();
    expect(groups[0]).toEqual({
      tenant: 'acme',
      type: 'dispatch_failure',
      error_class: 'runs API answered 422',
      http_status: 422,
      workflow_ref: 'onboarding@v3',
      count: 3,
      first: '2026-01-01T00:00:01.000Z',
      last: '2026-01-01T00:00:03.000Z',
      example_id: a3.id,
    });
    expect(groups.slice(1).map((x) => [x.tenant, x.type, x.http_status, x.workflow_ref, x.count])).toEqual([
      ['acme', 'dispatch_failure', 400, 'onboarding@v3', 1],
      ['acme', 'dispatch_failure', 422, 'report@v1', 1],
      ['acme', 'malformed_dispatch', null, null, 1],
      ['acme', 'test', 422, null, 1],
      ['acme', 'unreadable', null, null, 1],
      ['beta', 'dispatch_failure', 422, 'onboarding@v3', 1],
    ]);
    expect(groups.find((x) => x.type === 'unreadable')).toMatchObject({
      error_class: null,
      example_id: null,
      first: '2026-01-01T00:00:08.000Z',
    });
    expect(groups.reduce((n, x) => n + x.count, 0)).toBe(9);
  });

  test('drop: forgets one tenant, keeps the others', () => {
    const g = new DlqGrouper();
    const r = record({ at: '2026-01-01T00:00:00Z' });
    g.add('gone', { record: r, test: false }, 0);
    g.add('kept', { record: r, test: false }, 0);
    g.add('gone', { record: undefined, test: false }, 0);
    g.drop('gone');
    expect(g.result().map((x) => [x.tenant, x.count])).toEqual([['kept', 1]]);
  });

  test('the vanished DLQ topics: one stderr line naming them, none when there are none', () => {
    expect(vanishedLine({ vanished: [] })).toBeUndefined();
    expect(vanishedLine({ vanished: ['acme', 'globex'] })).toBe(
      'poimen-relay: not summarised, DLQ topic deleted while the summary ran: poimen.acme.dispatch.dlq, ' +
        'poimen.globex.dispatch.dlq\n',
    );
  });

  test('--since: older records are left out (dated by their own timestamp)', () => {
    const g = new DlqGrouper(Date.parse('2026-01-01T00:00:02Z'));
    for (const at of ['2026-01-01T00:00:01Z', '2026-01-01T00:00:02Z', '2026-01-01T00:00:03Z'])
      g.add('acme', { record: record({ at }), test: false }, Date.parse('2030-01-01T00:00:00Z'));
    expect(g.result()).toEqual([expect.objectContaining({ count: 2, first: '2026-01-01T00:00:02.000Z' })]);
  });

  test('workflow_ref only from a JSON object payload with a string one', () => {
    expect(workflowRefOf(record({ at: '2026-01-01T00:00:00Z', ref: 'w@1' }))).toBe('w@1');
    expect(workflowRefOf({ ...record({ at: '2026-01-01T00:00:00Z' }), payload: '[1]' })).toBeNull();
    expect(
      workflowRefOf({ ...record({ at: '2026-01-01T00:00:00Z' }), payload: '{"workflow_ref":3}' }),
    ).toBeNull();
    expect(workflowRefOf({ ...record({ at: '2026-01-01T00:00:00Z' }), payload: 'not json' })).toBeNull();
  });

  test('the table: a header and one aligned line per group, no payload', () => {
    const g = new DlqGrouper();
    const secret = record({
      at: '2026-01-01T00:00:00Z',
      payload: '{"workflow_ref":"w","input":{"password":"hunter2"}}',
    });
    g.add('acme', { record: secret, test: false }, 0);
    const text = summaryTable({ since: null, tenants: ['acme'], vanished: [], total: 1, groups: g.result() });
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^COUNT {2}TENANT {2}TYPE/);
    expect(lines[1]).toContain(secret.id);
    expect(lines[1]).toContain('runs API answered 422');
    expect(text).not.toContain('hunter2');
    expect(lines[0]!.indexOf('ERROR_CLASS')).toBe(lines[1]!.indexOf('runs API'));
  });
});
