/**
 * Test dead letters (`poimen-relay dlq send-test`): records an operator writes to a tenant's DLQ to check the
 * pipeline, the backlog gauges and the alerts end to end. Contract §6 fixes `type` to three values and says
 * nothing of extra fields, so a test dead letter is a §6-valid record (no new field, no new type) and the mark
 * is a Kafka header beside it, as the publisher's own `dlq-type` header is. docs/contract.md §6 and
 * docs/operations.md ("Test the DLQ pipeline") give the reasons.
 *
 * The header alone never makes a record a test: the record must also have the shape only `send-test` writes
 * (no source record, nothing to re-publish), so a stray header on a real dead letter cannot hide it from a
 * replay or let `dlq purge-tests` take it out of the backlog.
 */
import { type DlqRecord, type RecordHeaders, buildDlqRecord } from './dlqRecord';
import { topics } from './names';

/** The Kafka header that marks a test dead letter, with the value `TEST_DEAD_LETTER_VALUE`. */
export const TEST_DEAD_LETTER_HEADER = 'poimen-test';
export const TEST_DEAD_LETTER_VALUE = '1';
/** Kafka's "no partition / no offset": a test dead letter has no source record. */
const NO_SOURCE_PARTITION = -1;
const NO_SOURCE_OFFSET = '-1';

export interface TestDeadLetterInput {
  id: string;
  timestamp: Date | number;
  tenant: string;
  /** 1-based position in this send, and how many were sent: for the operator reading `error`. */
  index: number;
  count: number;
}

/**
 * `malformed_dispatch` is the §6 type of a record that is not a dispatch to run: it has no workflow, run, URL
 * or attempts (the fields a `dispatch_failure` must fill truthfully), and no relay version replays it without
 * `--type malformed_dispatch --force`. With `payload` null even that has nothing to re-publish.
 */
export function buildTestDeadLetter(input: TestDeadLetterInput): DlqRecord {
  const ms = new Date(input.timestamp).getTime();
  return buildDlqRecord({
    id: input.id,
    timestamp: ms,
    type: 'malformed_dispatch',
    tenant: input.tenant,
    dispatchKey: null,
    error:
      `test dead letter ${input.index}/${input.count} written by \`poimen-relay dlq send-test\`: not a real ` +
      'failure; never replayed; remove it from the backlog with `poimen-relay dlq purge-tests`',
    source: {
      topic: topics.dispatch(input.tenant),
      partition: NO_SOURCE_PARTITION,
      offset: NO_SOURCE_OFFSET,
      timestamp: String(ms),
    },
    key: null,
    // Also inside the value, for a reader that sees only values (kafka-console-consumer without headers).
    headers: { [TEST_DEAD_LETTER_HEADER]: TEST_DEAD_LETTER_VALUE },
    value: null,
  });
}

/** The Kafka headers a test dead letter is published with. */
export function testDeadLetterHeaders(): Record<string, string> {
  return { [TEST_DEAD_LETTER_HEADER]: TEST_DEAD_LETTER_VALUE };
}

/** Whether a DLQ message (its parsed record and Kafka headers) is a test dead letter. */
export function isTestDeadLetter(record: DlqRecord | undefined, headers: RecordHeaders | undefined): boolean {
  if (!record || !hasTestHeader(headers)) return false;
  return (
    record.type === 'malformed_dispatch' &&
    record.payload === null &&
    record.payload_base64 === undefined &&
    record.source.partition === NO_SOURCE_PARTITION &&
    record.source.offset === NO_SOURCE_OFFSET
  );
}

function hasTestHeader(headers: RecordHeaders | undefined): boolean {
  const value = headers?.[TEST_DEAD_LETTER_HEADER];
  // Exactly one value: a repeated header is not something send-test writes.
  if (value === undefined || Array.isArray(value)) return false;
  const text = typeof value === 'string' ? value : Buffer.from(value).toString('utf8');
  return text === TEST_DEAD_LETTER_VALUE;
}
