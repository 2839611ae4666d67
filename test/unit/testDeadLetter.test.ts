/**
 * Test dead letters (`dlq send-test`, src/contract/testDeadLetter.ts): the record is one contract §6 allows (its
 * fields and a §6 type, nothing added), and the mark needs both the Kafka header and the shape only send-test
 * writes, so no real dead letter can be taken for a test (and so skipped by replay or purged from the backlog).
 */
import {
  DLQ_TYPES,
  TEST_DEAD_LETTER_HEADER,
  buildDlqRecord,
  buildTestDeadLetter,
  isTestDeadLetter,
  parseDlqRecord,
  testDeadLetterHeaders,
} from '../../src/contract';
import { ConfigError } from '../../src/errors';
import { MAX_TEST_DEAD_LETTERS, parseTestCount } from '../../src/ops/dlqSendTest';

const SPEC_FIELDS = [
  'id',
  'type',
  'tenant_id',
  'dispatch_key',
  'workflow_id',
  'run_id',
  'error',
  'http_status',
  'timestamp',
  'retry_count',
  'max_retries',
  'topic',
  'target_url',
  'source',
  'payload',
];

const test1 = buildTestDeadLetter({
  id: '6f1c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f',
  timestamp: Date.UTC(2026, 0, 2, 3, 4, 5),
  tenant: 'acme',
  index: 1,
  count: 2,
});

/** A real dead letter of a record rejected at ingest: the same type, a real source record. */
function realMalformed(payload: string | null) {
  return buildDlqRecord({
    id: '0d9f1c52-7a3e-8b41-9c07-52e1f3a6b9d0',
    timestamp: Date.UTC(2026, 0, 2),
    type: 'malformed_dispatch',
    tenant: 'acme',
    dispatchKey: null,
    error: 'record value is not JSON',
    source: { topic: 'poimen.acme.dispatch', partition: 0, offset: '7', timestamp: '1767312000000' },
    key: null,
    headers: { [TEST_DEAD_LETTER_HEADER]: '1' },
    value: payload,
  });
}

describe('the test dead letter is a contract §6 record', () => {
  it('has exactly the §6 fields, a §6 type, and reads back as a DLQ record', () => {
    expect(Object.keys(test1).sort()).toEqual([...SPEC_FIELDS].sort());
    expect(DLQ_TYPES).toContain(test1.type);
    expect(test1).toMatchObject({
      type: 'malformed_dispatch',
      tenant_id: 'acme',
      dispatch_key: null,
      workflow_id: null,
      run_id: null,
      http_status: null,
      timestamp: '2026-01-02T03:04:05.000Z',
      retry_count: 0,
      max_retries: 0,
      topic: 'poimen.acme.dispatch.dlq',
      target_url: null,
      source: {
        topic: 'poimen.acme.dispatch',
        partition: -1,
        offset: '-1',
        timestamp: String(Date.UTC(2026, 0, 2, 3, 4, 5)),
        key: null,
        headers: { 'poimen-test': '1' },
      },
      payload: null,
    });
    expect(test1.error).toMatch(/^test dead letter 1\/2 .*dlq send-test.*not a real failure/);
    expect(parseDlqRecord(JSON.stringify(test1))).toEqual(test1);
  });
});

describe('isTestDeadLetter', () => {
  it('is true for the record with its header, as a string or as bytes (how kafkajs hands it over)', () => {
    expect(isTestDeadLetter(test1, testDeadLetterHeaders())).toBe(true);
    expect(isTestDeadLetter(test1, { 'poimen-test': Buffer.from('1'), 'dlq-type': 'x' })).toBe(true);
    // As read back from the topic.
    expect(
      isTestDeadLetter(parseDlqRecord(Buffer.from(JSON.stringify(test1))), testDeadLetterHeaders()),
    ).toBe(true);
  });

  it('is false without the header, with another value, or with the header repeated', () => {
    expect(isTestDeadLetter(test1, undefined)).toBe(false);
    expect(isTestDeadLetter(test1, {})).toBe(false);
    expect(isTestDeadLetter(test1, { 'poimen-test': '0' })).toBe(false);
    expect(isTestDeadLetter(test1, { 'poimen-test': Buffer.from('true') })).toBe(false);
    expect(isTestDeadLetter(test1, { 'poimen-test': ['1', '1'] })).toBe(false);
  });

  it('is false for a real dead letter that carries the header: the shape decides too', () => {
    const headers = testDeadLetterHeaders();
    expect(isTestDeadLetter(undefined, headers)).toBe(false);
    // A real source record, with or without a payload.
    expect(isTestDeadLetter(realMalformed('{"broken": '), headers)).toBe(false);
    expect(isTestDeadLetter(realMalformed(null), headers)).toBe(false);
    // Something to re-publish, or another type: never a test.
    expect(isTestDeadLetter({ ...test1, payload: '{}' }, headers)).toBe(false);
    expect(isTestDeadLetter({ ...test1, payload_base64: 'AA==' }, headers)).toBe(false);
    expect(isTestDeadLetter({ ...test1, type: 'dispatch_failure' }, headers)).toBe(false);
    expect(isTestDeadLetter({ ...test1, source: { ...test1.source, offset: '0' } }, headers)).toBe(false);
  });
});

describe('--count', () => {
  it('takes a whole number from 1 to the maximum', () => {
    expect(parseTestCount('1')).toBe(1);
    expect(parseTestCount('25')).toBe(25);
    expect(parseTestCount(String(MAX_TEST_DEAD_LETTERS))).toBe(MAX_TEST_DEAD_LETTERS);
  });

  it.each(['0', '-1', '1.5', 'abc', '', ' 2', String(MAX_TEST_DEAD_LETTERS + 1)])(
    'refuses %j with one line naming --count',
    (value) => {
      expect(() => parseTestCount(value)).toThrow(ConfigError);
      expect(() => parseTestCount(value)).toThrow(
        /^invalid configuration: --count = .*: must be a whole number/,
      );
    },
  );
});
