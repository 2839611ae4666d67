/**
 * What the Web UI shows for a dispatch execution: a one-line summary `tenant · workflow_ref ·
 * dispatch_key`, and details naming the source record and what the relay does. Producer text cannot put a link,
 * code or a second line into them.
 */
import { dispatchStartOptions } from '../../src/ingest/startDispatch';
import { dispatchDetails, dispatchSummary, plainText } from '../../src/ingest/startMetadata';
import type { DispatchInput } from '../../src/contract/workflow';

const input: DispatchInput = {
  tenant: 'acme',
  dispatch: { workflow_ref: 'onboarding@v3', input_json: '{}', goal_id: 'g-17', dispatch_key: 'd-0001' },
  source: { topic: 'poimen.acme.dispatch', partition: 0, offset: '42', timestamp: '1772366400000' },
  policy: { maxDurationMs: 86_400_000, attemptCap: 0 },
};

test('the summary is tenant · workflow_ref · dispatch_key, and every start carries it and the details', () => {
  expect(dispatchSummary(input)).toBe('acme · onboarding@v3 · d-0001');
  const options = dispatchStartOptions('poimen-dispatch', input);
  expect(options.staticSummary).toBe('acme · onboarding@v3 · d-0001');
  expect(options.staticDetails).toBe(dispatchDetails(input));
});

test('the details name the source record, the call, the retry budget and the DLQ topic', () => {
  const details = dispatchDetails(input);
  expect(details).toContain('poimen.acme.dispatch partition 0 offset 42, written 2026-03-01T12:00:00.000Z');
  expect(details).toContain('POST /v1/runs for workflow onboarding@v3 (goal g-17)');
  expect(details).toContain('retrying for up to 24 h from the first attempt');
  expect(details).toContain('poimen.acme.dispatch.dlq');
  expect(details).toContain('dispatch status --tenant acme --key d-0001');
});

test('producer text is one plain line: no link, code, HTML, control characters or unbounded length', () => {
  const hostile = 'x](https://evil.example)`rm -rf`\n**bold**\u001b[31m' + 'y'.repeat(500);
  const shown = plainText(hostile);
  for (const ch of ['[', ']', '(', ')', '`', '<', '\n', '\u001b']) expect(shown).not.toContain(ch);
  expect(Buffer.byteLength(shown)).toBeLessThanOrEqual(240);
  const summary = dispatchSummary({ ...input, dispatch: { ...input.dispatch, workflow_ref: hostile } });
  expect(summary.split('\n')).toHaveLength(1);
});

test('values the contract allows read as produced: an underscore in a tenant, a 256-character dispatch_key', () => {
  const key = 'k'.repeat(256);
  const details = dispatchDetails({
    ...input,
    tenant: 'acme_eu',
    dispatch: { ...input.dispatch, dispatch_key: key },
  });
  expect(details).toContain(`poimen.acme_eu.dispatch.dlq`);
  expect(details).toContain(`dispatch status --tenant acme_eu --key ${key})`);
});

test('a cut never splits a character, and the summary stays within 300 bytes of UTF-8', () => {
  const summary = dispatchSummary({
    ...input,
    tenant: 't'.repeat(63),
    dispatch: { ...input.dispatch, workflow_ref: '😀'.repeat(200), dispatch_key: 'é'.repeat(256) },
  });
  expect(Buffer.byteLength(summary)).toBeLessThanOrEqual(300);
  expect(() => encodeURIComponent(summary)).not.toThrow();
  expect(() => encodeURIComponent(plainText('😀'.repeat(300)))).not.toThrow();
});

test('format characters (bidi overrides, zero-width) are removed; a record time outside what a Date holds is left out, not thrown', () => {
  expect(plainText('abc\u202Edef\u200Bghi')).toBe('abc def ghi');
  const odd = { ...input, source: { ...input.source, timestamp: '-9000000000000000' } };
  expect(() => dispatchStartOptions('q', odd)).not.toThrow();
  expect(dispatchDetails(odd)).not.toContain('written');
});
