/**
 * Which dead letters a replay, discard or redrive takes (./dlq.ts), and the message a taken one is re-published as:
 * the source record's key, value and headers, marked with the DLQ id it replays and, for a redrive, the redrive
 * count. Pure: no I/O.
 */
import { retryableStatus } from '../activities/classify';
import {
  type DlqRecord,
  type DlqType,
  REDRIVE_COUNT_HEADER,
  dispatchRecordKey,
  dlqRecordHeaders,
  dlqRecordKey,
  dlqRecordPayload,
  redriveCountOf,
} from '../contract';

/**
 * A redrive's policy (`dlq redrive`): dispatch failures that ran out of retries are re-published once they are
 * `afterMs` old, each dispatch at most `max` times; `nowMs` is the redrive's clock.
 */
export interface RedrivePolicy {
  afterMs: number;
  max: number;
  nowMs: number;
}

export interface VerdictOptions {
  ids?: string[];
  type?: DlqType;
  sinceMs?: number;
  force?: boolean;
  discard?: { all: boolean; tests?: boolean };
  redrive?: RedrivePolicy;
}

/** Why a record is passed over (it stays pending), or the record to take. */
export type Verdict =
  | { record: DlqRecord | undefined }
  | 'filtered'
  | 'not_replayable'
  | 'unreadable'
  | 'test'
  | 'not_due'
  | 'redrives_spent';

export function decide(record: DlqRecord | undefined, test: boolean, opts: VerdictOptions): Verdict {
  // Only test dead letters, and no other record whatever it is: a real one stays pending.
  if (opts.discard?.tests) return test ? { record } : 'filtered';
  // Before the filters and --force: a test dead letter is reported as one, never re-published.
  if (test && !opts.discard) return 'test';
  // Not a DLQ record (written by something else): only `dlq discard --all` takes it.
  if (!record) return opts.discard?.all ? { record } : 'unreadable';
  if (opts.ids && opts.ids.length > 0 && !opts.ids.includes(record.id)) return 'filtered';
  if (opts.type !== undefined && record.type !== opts.type) return 'filtered';
  if (opts.sinceMs !== undefined && Date.parse(record.timestamp) < opts.sinceMs) return 'filtered';
  // Discarding re-publishes nothing: whatever matches goes, replayable or not.
  if (opts.discard) return { record };
  // A malformed or mismatched record would only be dead-lettered again: replayed only on explicit request.
  if (record.type !== 'dispatch_failure' && !(opts.force && opts.type === record.type))
    return 'not_replayable';
  // Nothing to re-publish: a tombstone, or a dead letter that had to go without its payload.
  if (record.payload === null && record.payload_base64 === undefined) return 'not_replayable';
  if (opts.redrive) return redriveVerdict(record, opts.redrive);
  return { record };
}

/**
 * A redrive takes only what waiting may cure: a dispatch failure whose last answer was retryable (or none came:
 * a timeout, a transport error, the breaker), never one the API refused for good; once it is old enough; and
 * while its dispatch has redrives left. What it passes over stays pending, for an operator's replay or discard.
 */
function redriveVerdict(record: DlqRecord, policy: RedrivePolicy): Verdict {
  if (record.type !== 'dispatch_failure') return 'not_replayable';
  if (record.http_status !== null && !retryableStatus(record.http_status)) return 'not_replayable';
  if (redriveCountOf(record.source) >= policy.max) return 'redrives_spent';
  if (Date.parse(record.timestamp) > policy.nowMs - policy.afterMs) return 'not_due';
  return { record };
}

/** The message a replay or redrive re-publishes to `.dispatch` for `record`. */
export function republishedMessage(
  tenant: string,
  record: DlqRecord,
  redrive: RedrivePolicy | undefined,
): { key: Buffer | null; value: Buffer | null; headers: Record<string, Buffer | Buffer[] | string> } {
  return {
    // The same message as the source record: its key and headers (dead letters written before they were kept
    // have neither: the conventional key then).
    key: replayKey(tenant, record),
    value: toBuffer(dlqRecordPayload(record)),
    headers: {
      ...dlqRecordHeaders(record),
      'poimen-replay-of': record.id,
      ...(redrive ? { [REDRIVE_COUNT_HEADER]: String(redriveCountOf(record.source) + 1) } : {}),
    },
  };
}

function toBuffer(bytes: Uint8Array | null | undefined): Buffer | null {
  return bytes ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : null;
}

function replayKey(tenant: string, record: DlqRecord): Buffer | null {
  const key = dlqRecordKey(record);
  if (key !== null) return Buffer.from(key);
  return record.dispatch_key !== null ? Buffer.from(dispatchRecordKey(tenant, record.dispatch_key)) : null;
}
