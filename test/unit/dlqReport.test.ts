/** `dlq replay --report`: the line of each outcome, and a file appended line by line (src/ops/dlqReport.ts). */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../src/errors';
import type { DlqEntry } from '../../src/ops/dlq';
import { ReplayReport, reportLine } from '../../src/ops/dlqReport';
import { buildDlqRecord } from '../../src/contract';

const record = buildDlqRecord({
  id: 'id-1',
  timestamp: 0,
  type: 'dispatch_failure',
  tenant: 'acme',
  dispatchKey: 'k-1',
  error: 'runs API answered 422: no',
  source: { topic: 'poimen.acme.dispatch', partition: 0, offset: '4', timestamp: '0' },
  value: '{"workflow_ref":"w","input":{"secret":"s3cr3t"},"dispatch_key":"k-1"}',
});
const entry: DlqEntry = { partition: 2, offset: '17', record, test: false };

test('replayed and would_replay: the record, no payload', () => {
  const line = reportLine('replayed', entry)!;
  expect(line).toEqual({
    at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    outcome: 'replayed',
    partition: 2,
    offset: '17',
    id: 'id-1',
    type: 'dispatch_failure',
    dispatch_key: 'k-1',
  });
  expect(JSON.stringify(line)).not.toContain('s3cr3t');
  expect(reportLine('would_replay', entry)).toMatchObject({ outcome: 'would_replay' });
});

test.each(['filtered', 'not_replayable', 'unreadable', 'test', 'deferred', 'already_handled'] as const)(
  '%s: skipped, with the reason',
  (outcome) => {
    expect(reportLine(outcome, entry)).toMatchObject({ outcome: 'skipped', reason: outcome, id: 'id-1' });
  },
);

test('failed: with the error on one line; a record that is not a DLQ record has null fields', () => {
  expect(reportLine('failed', entry, new Error('broker\ngone'))).toMatchObject({
    outcome: 'failed',
    error: 'broker gone',
  });
  expect(
    reportLine('unreadable', { partition: 0, offset: '1', record: undefined, test: false }),
  ).toMatchObject({
    id: null,
    type: null,
    dispatch_key: null,
  });
  expect(reportLine('discarded', entry)).toBeUndefined();
});

test('the file: appended to, one line per record, readable while open; an unwritable path is a usage error', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dlq-report-'));
  const file = path.join(dir, 'report.jsonl');
  fs.writeFileSync(file, '{"earlier":true}\n');
  const report = ReplayReport.open(file);
  report.record('replayed', entry);
  // Written through at once: a replay killed now leaves this line in the file.
  expect(fs.readFileSync(file, 'utf8').trimEnd().split('\n')).toHaveLength(2);
  report.record('filtered', entry);
  report.close();
  const lines = fs
    .readFileSync(file, 'utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l));
  expect(lines.map((l) => l.outcome ?? 'earlier')).toEqual(['earlier', 'replayed', 'skipped']);
  expect(() => ReplayReport.open(path.join(dir, 'missing', 'r.jsonl'))).toThrow(ConfigError);
  expect(() => ReplayReport.open(path.join(dir, 'missing', 'r.jsonl'))).toThrow(
    /--report .* cannot be written \(ENOENT\)/,
  );
});
